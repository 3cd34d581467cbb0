# SPDX-License-Identifier: GPL-2.0
#
#   make                 module for the default kernel + the flowbulk tool
#   make module KVER=V   module for another installed kernel (or KDIR=path)
#   make modules-all     module for every installed kernel (tools/kernels)
#   make check           set-up, build, every test; ends with "N passed, N failed"
#   make check-debug     every selftest on the debug kernel (KASAN, lockdep, kmemleak)
#   make demo            the demo: VM, topology, traffic, side-by-side figures
#   make bench           the full benchmark matrix
#   make setup           install what the build, tests and demo need (apt-get)

KVER ?= $(shell tools/kernels --default 2>/dev/null)
KDIR ?= /lib/modules/$(KVER)/build
BUILD ?= $(CURDIR)/build
KBUILD_OUT := $(BUILD)/kmod/$(KVER)
JOBS ?= $(shell nproc)

.PHONY: all module bench-module modules-all userspace check check-debug demo bench setup clean help

all: module userspace

# Each kernel gets its own copy of the sources so that builds for different
# kernels never share object files.
module:
	@test -n "$(KVER)" || { echo "no kernel headers found: run 'make setup'" >&2; exit 1; }
	@mkdir -p $(KBUILD_OUT)
	@cp -a Kbuild module $(KBUILD_OUT)/
	$(MAKE) -C $(KDIR) M=$(KBUILD_OUT) W=1 -j$(JOBS) modules
	@tools/vm/mkmoddb $(KVER) $(KBUILD_OUT)/module/nf_flow_bulk.ko $(KBUILD_OUT)/moddb
	@echo "built $(KBUILD_OUT)/module/nf_flow_bulk.ko"

# The benchmark's generator and sink (tools/bench/kmod), not the product.
bench-module:
	@test -n "$(KVER)" || { echo "no kernel headers found: run 'make setup'" >&2; exit 1; }
	@mkdir -p $(KBUILD_OUT)/bench
	@cp -a tools/bench/kmod/. $(KBUILD_OUT)/bench/
	$(MAKE) -C $(KDIR) M=$(KBUILD_OUT)/bench W=1 -j$(JOBS) modules

modules-all:
	@for v in $$(tools/kernels); do \
		$(MAKE) --no-print-directory module bench-module KVER=$$v || exit 1; \
	done

userspace:
	cmake -S userspace -B $(BUILD)/userspace -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD)/userspace -j$(JOBS)

check:
	tools/check

# Not part of check: builds the debug kernel the first time (about an hour).
check-debug:
	tools/debug-kernel/check

demo:
	tools/demo

bench:
	tools/bench/run

setup:
	tools/setup

clean:
	rm -rf $(BUILD)

help:
	@sed -n '3,11p' Makefile
