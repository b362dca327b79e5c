// SPDX-License-Identifier: GPL-2.0
/* Host unit tests (TAP) of image_to_json(). */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "image_json.h"
#include "tap.h"

static json_t *render(const char *program)
{
	struct sigmig_image img;

	memset(&img, 0, sizeof(img));
	img.version = SIGMIG_IMAGE_VERSION;
	img.arch = EM_X86_64;
	strncpy(img.program, program, sizeof(img.program) - 1);
	return image_to_json(&img, 10);
}

/*
 * Found by fuzz_image_json: the decoder accepts any bytes in the program
 * name, and json_pack() refused one that is not UTF-8, so image_to_json()
 * returned NULL and GET .../signals answered 200 with an error body.
 */
static void test_program_names(void)
{
	json_t *doc = render("sigstorm");

	ok(doc && !strcmp(json_string_value(json_object_get(doc, "program")),
			  "sigstorm"), "a program name renders as it is");
	json_decref(doc);
	doc = render("sigst\x1f\xbd\xd7\xff");
	ok(doc != NULL, "a program name that is not UTF-8 still renders");
	ok(doc && !strcmp(json_string_value(json_object_get(doc, "program")),
			  "sigst????"), "its unprintable bytes as '?'");
	json_decref(doc);
	doc = render("caf\xc3\xa9");
	ok(doc && !strcmp(json_string_value(json_object_get(doc, "program")),
			  "caf??"), "any byte outside printable ASCII as '?'");
	json_decref(doc);
}

int main(void)
{
	test_program_names();
	return tap_done();
}
