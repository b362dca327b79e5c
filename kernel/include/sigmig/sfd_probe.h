/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The probe of the signalfd pending-signal interface (sfd_probe(),
 * sfd_interface_usable()) for the programs outside the selftests: the
 * series' uapi additions from the mirror header, then the probe itself,
 * which lives beside the selftests because the series' selftests patch
 * carries it into the tree as it is.
 */
#ifndef SIGMIG_SFD_PROBE_H
#define SIGMIG_SFD_PROBE_H

#include <sys/signalfd.h>

#include <sigmig/sfd.h>

#include "../../selftests/sfd_probe.h"

#endif /* SIGMIG_SFD_PROBE_H */
