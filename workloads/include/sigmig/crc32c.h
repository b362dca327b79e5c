/* SPDX-License-Identifier: GPL-2.0 */
/* The CRC of sigmig's images, for every container of moved state. */
#ifndef SIGMIG_CRC32C_H
#define SIGMIG_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C (Castagnoli) of @len bytes at @p. */
uint32_t sigmig_crc32c(const uint8_t *p, size_t len);

#endif /* SIGMIG_CRC32C_H */
