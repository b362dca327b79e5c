// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sigmig/ctl.h>

#include "ctl.h"

/* The raw reply's line, parsed; its image (if read) changes hands. */
static int take_reply(struct sigmig_ctl_reply *raw, struct ctl_reply *reply)
{
	reply->json = json_loads(raw->line, 0, NULL);
	if (!json_is_object(reply->json)) {
		json_decref(reply->json);
		reply->json = NULL;
		sigmig_ctl_reply_free(raw);
		return -EPROTO;
	}
	reply->payload = raw->image;
	reply->payload_len = raw->image_len;
	free(raw->line);
	return 0;
}

int ctl_request(const char *sock_path, const char *verb, int timeout_ms,
		struct ctl_reply *reply)
{
	struct sigmig_ctl_reply raw;
	int err;

	memset(reply, 0, sizeof(*reply));
	err = sigmig_ctl_request(sock_path, verb, timeout_ms, &raw);
	return err ? err : take_reply(&raw, reply);
}

int ctl_open(const char *sock_path, const char *verb, int timeout_ms,
	     struct ctl_reply *reply, struct sigmig_ctl_stream *stream)
{
	struct sigmig_ctl_reply raw;
	int err;

	memset(reply, 0, sizeof(*reply));
	err = sigmig_ctl_open(sock_path, verb, timeout_ms, &raw, stream);
	if (!err)
		err = take_reply(&raw, reply);
	if (err)
		sigmig_ctl_close(stream);
	return err;
}

void ctl_reply_free(struct ctl_reply *reply)
{
	json_decref(reply->json);
	free(reply->payload);
	memset(reply, 0, sizeof(*reply));
}

int ctl_reply_ok(const struct ctl_reply *reply)
{
	return json_is_true(json_object_get(reply->json, "ok"));
}

const char *ctl_reply_error(const struct ctl_reply *reply)
{
	const char *s = json_string_value(json_object_get(reply->json, "error"));

	return s ? s : "runtime_error";
}

const char *ctl_reply_message(const struct ctl_reply *reply)
{
	const char *s = json_string_value(json_object_get(reply->json, "message"));

	return s ? s : "";
}
