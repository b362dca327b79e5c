// SPDX-License-Identifier: GPL-2.0
/*
 * Leveled logging to stderr. One line per call, written with a single
 * fprintf under the stream lock so that lines from concurrent request
 * threads never interleave.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"

static enum log_level current_level = LOG_LVL_INFO;

static const char *const level_names[] = {
	[LOG_LVL_ERROR] = "error",
	[LOG_LVL_WARN] = "warn",
	[LOG_LVL_INFO] = "info",
	[LOG_LVL_DEBUG] = "debug",
};

void log_set_level(enum log_level level)
{
	current_level = level;
}

enum log_level log_get_level(void)
{
	return current_level;
}

int log_parse_level(const char *name, enum log_level *level)
{
	unsigned int i;

	for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(name, level_names[i]) == 0) {
			*level = i;
			return 0;
		}
	}
	return -1;
}

/*
 * Whatever a client sent (a decoded path, a program name) may hold
 * control characters: "%0a" in a path would start a forged log line.
 * They are written as \xNN, and so is the backslash itself, so that an
 * escape in the log always means one.
 */
static void escape_controls(const char *in, char *out, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	for (; *in && o + 5 <= len; in++) {
		unsigned char c = (unsigned char)*in;

		if (c >= 0x20 && c != 0x7f && c != '\\') {
			out[o++] = (char)c;
			continue;
		}
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[c >> 4];
		out[o++] = hex[c & 0xf];
	}
	out[o] = '\0';
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char stamp[32], raw[2048], line[2048];
	struct timespec now;
	struct tm tm;
	va_list ap;

	if (level > current_level)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	escape_controls(raw, line, sizeof(line));
	fprintf(stderr, "%s.%03ldZ sigmig-agent %s: %s\n", stamp,
		now.tv_nsec / 1000000, level_names[level], line);
}
