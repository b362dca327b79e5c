#!/bin/sh
# The round trip of 10-checkpoint-roundtrip.sh restored the way a kernel
# without signalfd write() needs: one rt_(tg)sigqueueinfo() per record
# (sigstorm --requeue-with sigqueueinfo), so that the fallback stays tested.
cd "$(dirname "$0")" || exit 1
REQUEUE=sigqueueinfo exec ./10-checkpoint-roundtrip.sh
