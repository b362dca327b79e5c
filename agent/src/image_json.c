// SPDX-License-Identifier: GPL-2.0
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>

#include "image_json.h"
#include "siginfo_json.h"

static enum siginfo_abi abi_of(const struct sigmig_image *img)
{
	return img->arch == EM_386 ? SIGINFO_ABI_32 : SIGINFO_ABI_64;
}

static const char *arch_name(uint32_t arch)
{
	switch (arch) {
	case EM_X86_64: return "x86_64";
	case EM_386: return "i386";
	case EM_AARCH64: return "aarch64";
	default: return "unknown";
	}
}

static json_t *mask_json(uint64_t mask)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%016" PRIx64, mask);
	return json_string(buf);
}

static json_t *queue_json(const struct sigmig_queue *q, enum siginfo_abi abi,
			  unsigned int limit)
{
	json_t *list = json_array(), *o;
	uint32_t i, n = q->count < limit ? q->count : limit;

	for (i = 0; i < n; i++)
		json_array_append_new(list, siginfo_to_json(q->entries[i].bytes, abi));
	o = json_pack("{s:I, s:b, s:o}", "count", (json_int_t)q->count,
		      "truncated", n < q->count, "signals", list);
	return o;
}

static json_t *threads_json(const struct sigmig_image *img, unsigned int limit)
{
	json_t *list = json_array();
	uint32_t i;

	for (i = 0; i < img->nthreads; i++) {
		const struct sigmig_thread *t = &img->threads[i];

		json_array_append_new(list, json_pack("{s:I, s:i, s:o, s:o}",
			"index", (json_int_t)t->index, "tid", t->tid,
			"blocked", mask_json(t->blocked),
			"pending", queue_json(&t->pending, abi_of(img), limit)));
	}
	return list;
}

static json_t *timers_json(const struct sigmig_image *img)
{
	json_t *list = json_array();
	char sig[24];
	uint32_t i;

	for (i = 0; i < img->ntimers; i++) {
		const struct sigmig_timer *t = &img->timers[i];

		signal_name(t->signo, sig, sizeof(sig));
		json_array_append_new(list, json_pack(
			"{s:i, s:i, s:i, s:i, s:s, s:I, s:I, s:i, s:I, s:I}",
			"id", t->id, "clock", t->clock, "notify", t->notify,
			"signo", t->signo, "signal", sig,
			"value", (json_int_t)t->value,
			"thread_index", (json_int_t)t->thread_index,
			"overrun", t->overrun,
			"interval_ns", (json_int_t)t->interval_ns,
			"remaining_ns", (json_int_t)t->remaining_ns));
	}
	return list;
}

/* The image's bytes, printable ASCII or '?': a JSON string can hold them. */
static void printable_name(char *dst, const char *src, size_t max)
{
	size_t i;

	for (i = 0; i < max && src[i]; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
	dst[i] = '\0';
}

json_t *image_to_json(const struct sigmig_image *img, unsigned int limit)
{
	char program[sizeof(img->program) + 1];

	printable_name(program, img->program, sizeof(img->program));
	return json_pack("{s:i, s:s, s:I, s:i, s:s, s:I, s:o, s:o, s:o}",
			 "version", (int)img->version,
			 "arch", arch_name(img->arch),
			 "created_ns", (json_int_t)img->created_ns,
			 "pid", img->pid, "program", program,
			 "pending_total",
			 (json_int_t)sigmig_image_pending_total(img),
			 "shared", queue_json(&img->shared, abi_of(img), limit),
			 "threads", threads_json(img, limit),
			 "timers", timers_json(img));
}
