/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Debian 12's compel headers include "common/bitsperlong.h" from
 * <compel/plugins/std/syscall-types.h> but do not ship it. All they need
 * from it is BITS_PER_LONG, tested with #if.
 */
#ifndef SIGMIG_COMPEL_BITSPERLONG_H
#define SIGMIG_COMPEL_BITSPERLONG_H

#ifndef BITS_PER_LONG
#define BITS_PER_LONG	(__SIZEOF_LONG__ * 8)
#endif

#endif /* SIGMIG_COMPEL_BITSPERLONG_H */
