/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A bundle: the files of a CRIU-engine move (CRIU's images, the signal
 * records, a manifest) in one body, checked whole by a CRC-32C before a
 * byte of it is written out. A codec only: no HTTP, no processes.
 *
 *   "SGMB" u32 version (1), then per file: u16 name length, the name
 *   ("DIR/FILE", DIR one of the bundle's directories, FILE of
 *   [A-Za-z0-9._-], not starting with '.'), u64 size, the bytes; a u16 0
 *   ends the list; then the CRC-32C of everything before it. Integers are
 *   little-endian.
 */
#ifndef AGENT_BUNDLE_H
#define AGENT_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#define BUNDLE_FILES_MAX	8192

/*
 * Appends every regular file of @root/DIR, for each DIR of @dirs (NULL-
 * terminated), to a new bundle in *@out (*@len bytes, free()). -1 with
 * @err set when a file cannot be read or a name is not one a bundle holds.
 */
int bundle_pack(const char *root, const char *const *dirs, uint8_t **out,
		size_t *len, char *err, size_t errlen);

/*
 * Checks @data whole (magic, version, names, sizes, CRC), then writes its
 * files under @root (which must exist; its DIRs are created, files must
 * not exist yet); with @root NULL only checks. -1 with @err set, before anything is written when the
 * bundle is malformed.
 */
int bundle_unpack(const uint8_t *data, size_t len, const char *root,
		  char *err, size_t errlen);

/* @name is "DIR/FILE" as a bundle may hold it. */
int bundle_name_valid(const char *name, size_t len);

#endif
