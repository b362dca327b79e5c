# SPDX-License-Identifier: GPL-2.0
#
# KSRC, the patched kernel tree, for the Makefiles under kernel/.  Where it
# lives is build-kernel.sh's to say (it extracts and patches it on first
# use); build-initramfs.sh passes the same answer down as SIGMIG_KERNEL_TREE.
# Needs REPO (the repository root) set by the including Makefile.
ifeq ($(origin KSRC),undefined)
ifneq ($(filter-out clean,$(or $(MAKECMDGOALS),all)),)
KSRC := $(or $(SIGMIG_KERNEL_TREE),$(shell $(REPO)/orchestrate/build-kernel.sh --print-tree))
$(if $(KSRC),,$(error orchestrate/build-kernel.sh --print-tree gave no kernel tree))
endif
endif
