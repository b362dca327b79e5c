/* SPDX-License-Identifier: GPL-2.0 */
#ifndef AGENT_JSON_FILE_H
#define AGENT_JSON_FILE_H

#include <jansson.h>

/*
 * @o to @path, mode 0600: written whole to PATH.tmp, then renamed over
 * @path, so that an agent killed meanwhile leaves the old file. 0, or -1
 * with errno set.
 */
int json_file_replace(const char *path, const json_t *o);

#endif
