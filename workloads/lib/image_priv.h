/* SPDX-License-Identifier: GPL-2.0 */
/* What image.c offers the rest of libsigmig and its tests beyond <sigmig/image.h>. */
#ifndef SIGMIG_IMAGE_PRIV_H
#define SIGMIG_IMAGE_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include <sigmig/crc32c.h>

/* The ELF e_machine of this build: images are only restored on their own. */
uint16_t sigmig_native_arch(void);

#endif /* SIGMIG_IMAGE_PRIV_H */
