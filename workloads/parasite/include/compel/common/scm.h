/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Debian 12's <compel/plugins/std/fds.h> includes <compel/common/scm.h>,
 * which the package does not ship. Nothing in the installed headers uses
 * a definition from it, and the parasite here passes no descriptors
 * (compel's own fd passing lives in std.lib.a, already compiled), so it
 * only has to exist.
 */
#ifndef SIGMIG_COMPEL_SCM_H
#define SIGMIG_COMPEL_SCM_H

#endif /* SIGMIG_COMPEL_SCM_H */
