# SPDX-License-Identifier: GPL-2.0
#
#   make                 module for the default kernel + the flowbulk tool
#   make module KVER=V   module for another installed kernel (or KDIR=path)
#   make userspace       the flowbulk tool alone (build/userspace)
#   make modules-all     module for every installed kernel (tools/kernels)
#   make check           set-up, build, every test; ends with "N passed, N failed"
#   make lint            the lint phase of check alone: shellcheck, checkpatch,
#                        docs and figures, layering, clang-format (tools/lint)
#   make check-install   the DKMS install test in a VM (long: not in check)
#   make check-debug     every selftest on the debug kernel (KASAN, lockdep, kmemleak)
#   make check-newest    the Debian 7.x kernels alone: every selftest on
#                        unstable's released one (the proven list's run),
#                        the newest line's set on the newest
#   make check-series    .ci/run RUNS times (5), each in a new clone of HEAD
#   make demo            the demo: VM, topology, traffic, side-by-side figures
#   make bench           the qdisc and encapsulation matrix, virtio-net, wall clock
#   make bench-peers     the module against the stock alternatives (fraglist
#                        GRO, UDP GRO forwarding, GRO off) and XDP, published
#   make bench-xdp       the benchmark's XDP forwarder (BPF objects)
#   make figures         the published tables and README's status table again
#                        from Documentation/perf/*.json (tools/bench/figures)
#   make bench-module    the benchmark's generator and sink (nfb_bench.ko)
#   make bench-setup     flow set-up: 5,000 new flows per second, stock and
#                        the module (tools/bench/icount/setup.sh)
#   make bench-tcp       iperf3 TCP through both routers under icount: direct,
#                        plain, stock and the module (tools/bench/icount/tcp.sh)
#   make bench-hosts     sunset - west - east - sunrise on four guests, or on
#                        the real hosts of INVENTORY=file (tools/bench/hosts)
#   make bench-rtnl      RTNL held by the module's rescans while 100 namespaces
#                        churn their hooks (tools/bench/icount/rtnl.py; RTNL_OPTS)
#   make setup           install what the build, tests and demo need (apt-get)
#   make install         module into /lib/modules/KVER/updates (depmod), tool,
#                        man page, completion, examples under PREFIX, and
#                        flowbulk.service with its helper and
#                        /etc/flowbulk/attach.conf (enabled: not); DESTDIR
#   make uninstall       remove what make install put there
#   make install-module, install-userspace, uninstall-module,
#     uninstall-userspace  one half of install / uninstall
#   make install-service, uninstall-service  flowbulk.service, its helper
#                        and /etc/flowbulk/attach.conf alone (enabled: not)
#   make dkms            sources into /usr/src, dkms add + install for KVER
#   make dkms-source     the sources into /usr/src only (no dkms add)
#   make dkms-uninstall  dkms remove --all, sources out of /usr/src
#   make deb             the Debian packages nf-flow-bulk-dkms and flowbulk
#                        into build/deb (dpkg-buildpackage; DEB_BUILD_OPTIONS)
#   make check-deb       the packages installed, booted, reloaded, upgraded
#                        and purged in a VM (long: not in check)
#   make clean           remove build/
#   make help            this list

# The running kernel when its headers are there (a router), else the
# project's default kernel (this machine's guests).
KVER ?= $(shell if [ -d /lib/modules/$$(uname -r)/build ]; then uname -r; \
		else tools/kernels --default 2>/dev/null; fi)
KDIR ?= /lib/modules/$(KVER)/build
BUILD ?= $(CURDIR)/build
KBUILD_OUT := $(BUILD)/kmod/$(KVER)
JOBS ?= $(shell nproc)

PREFIX ?= /usr/local
DESTDIR ?=
NAME := nf_flow_bulk
VERSION := $(shell sed -n 's/^\#define NFB_VERSION "\(.*\)"/\1/p' module/main.c)
MODDIR := $(DESTDIR)/lib/modules/$(KVER)/updates
DOCDIR := $(DESTDIR)$(PREFIX)/share/doc/$(NAME)
DKMS_SRC := $(DESTDIR)/usr/src/$(NAME)-$(VERSION)
# What DKMS builds from: dkms.conf builds with the kernel's own make, so the
# Kbuild files, the sources and the probe script are enough.
DKMS_FILES := dkms.conf Kbuild module/Kbuild module/conftest.sh \
	$(wildcard module/*.c module/*.h module/uapi/*.h)
# flowbulk.service (make install): the unit where systemd looks for a
# PREFIX's units, its helper, and the list it reads (in /etc, where the
# helper reads it, whatever PREFIX).
UNITDIR ?= $(PREFIX)/lib/systemd/system
LIBEXECDIR ?= $(PREFIX)/libexec
SYSCONFDIR ?= /etc
EXAMPLES := packaging/modprobe.d/nf_flow_bulk.conf \
	packaging/sysctl.d/90-nf_flow_bulk.conf \
	packaging/modules-load.d/nf_flow_bulk.conf

.PHONY: figures all module bench-module bench-xdp bench-setup bench-tcp bench-hosts bench-rtnl modules-all userspace check lint check-install check-debug check-series demo bench bench-peers setup clean help
.PHONY: install uninstall install-module uninstall-module install-userspace uninstall-userspace
.PHONY: install-service uninstall-service
.PHONY: dkms dkms-source dkms-uninstall deb check-deb

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

# The benchmark's XDP peer (tools/bench/xdp): BPF objects that
# tools/bench/icount/guest.sh attaches with ip link (xdpdrv obj ... sec xdp).
BPF_CFLAGS := -O2 -g -Wall -Wextra -Werror -target bpf \
	-I/usr/include/$(shell gcc -dumpmachine)
bench-xdp:
	@mkdir -p $(BUILD)/xdp
	@for p in xdp_fwd xdp_pass; do \
		clang $(BPF_CFLAGS) -c tools/bench/xdp/$$p.bpf.c -o $(BUILD)/xdp/$$p.o || exit 1; \
	done

modules-all:
	@for v in $$(tools/kernels); do \
		$(MAKE) --no-print-directory module bench-module KVER=$$v || exit 1; \
	done

userspace:
	cmake -S userspace -B $(BUILD)/userspace -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD)/userspace -j$(JOBS)

# The module for KVER into /lib/modules/KVER/updates, where depmod ranks it
# above the kernel's own tree; the tool, flowbulk(8), its bash completion and
# the example configuration under PREFIX. With DESTDIR (a package's staging
# tree) depmod runs on that tree, and only when it holds the kernel's
# modules.order (depmod -b needs the kernel's module lists).
install: install-module install-userspace

install-module: module
	install -D -m 0644 $(KBUILD_OUT)/module/$(NAME).ko $(MODDIR)/$(NAME).ko
	$(call run_depmod)

uninstall-module:
	rm -f $(MODDIR)/$(NAME).ko
	-rmdir -p --ignore-fail-on-non-empty $(MODDIR) 2>/dev/null
	$(call run_depmod)

define run_depmod
	@if [ -z "$(DESTDIR)" ]; then depmod -a $(KVER); \
	elif [ -f $(DESTDIR)/lib/modules/$(KVER)/modules.order ]; then \
		depmod -b $(DESTDIR) -a $(KVER); \
	else echo "DESTDIR set: depmod is for the package's postinst"; fi
endef

# The CMake build installs the tool, the man page and the completion
# (userspace/CMakeLists.txt); uninstall names the same three files.
install-userspace: userspace install-service
	DESTDIR=$(DESTDIR) cmake --install $(BUILD)/userspace --prefix $(PREFIX)
	for f in $(EXAMPLES); do install -D -m 0644 $$f $(DOCDIR)/examples/$${f#packaging/}; done
	install -m 0644 README.md $(DOCDIR)/README.md

# flowbulk.service and its helper, with the paths of PREFIX (the package's
# are /usr's), and attach.conf unless there is one (the operator's list).
# Nothing is enabled or started: "systemctl enable flowbulk" is the
# operator's (Documentation/nf_flow_bulk.rst, "With make install").
SERVICE_SED := -e 's,/usr/libexec/flowbulk/,$(LIBEXECDIR)/flowbulk/,g' \
	-e 's,/usr/sbin/flowbulk,$(PREFIX)/sbin/flowbulk,g' \
	-e 's,/etc/flowbulk/,$(SYSCONFDIR)/flowbulk/,g'
install-service:
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(LIBEXECDIR)/flowbulk
	sed $(SERVICE_SED) packaging/systemd/flowbulk.service >$(DESTDIR)$(UNITDIR)/flowbulk.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/flowbulk.service
	sed $(SERVICE_SED) packaging/systemd/flowbulk-attach-list \
		>$(DESTDIR)$(LIBEXECDIR)/flowbulk/flowbulk-attach-list
	chmod 0755 $(DESTDIR)$(LIBEXECDIR)/flowbulk/flowbulk-attach-list
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/flowbulk/attach.conf ]; then \
		echo "$(DESTDIR)$(SYSCONFDIR)/flowbulk/attach.conf kept as it is"; \
	else \
		echo "install -D -m 0644 packaging/flowbulk/attach.conf $(DESTDIR)$(SYSCONFDIR)/flowbulk/attach.conf"; \
		install -D -m 0644 packaging/flowbulk/attach.conf $(DESTDIR)$(SYSCONFDIR)/flowbulk/attach.conf; \
	fi
	@[ -n "$(DESTDIR)" ] || echo "flowbulk.service installed, not enabled:" \
		"systemctl daemon-reload; systemctl enable flowbulk (see $(SYSCONFDIR)/flowbulk/attach.conf)"

# attach.conf goes as well when it is as installed; one the operator
# changed stays (as dpkg keeps a changed conffile until the purge).
uninstall-service:
	rm -f $(DESTDIR)$(UNITDIR)/flowbulk.service $(DESTDIR)$(LIBEXECDIR)/flowbulk/flowbulk-attach-list
	@f=$(DESTDIR)$(SYSCONFDIR)/flowbulk/attach.conf; \
	if [ -e "$$f" ] && ! cmp -s packaging/flowbulk/attach.conf "$$f"; then \
		echo "$$f changed since the install: kept"; \
	else \
		rm -f "$$f"; \
	fi
	-rmdir -p --ignore-fail-on-non-empty $(DESTDIR)$(UNITDIR) $(DESTDIR)$(LIBEXECDIR)/flowbulk \
		$(DESTDIR)$(SYSCONFDIR)/flowbulk 2>/dev/null

uninstall-userspace: uninstall-service
	rm -f $(DESTDIR)$(PREFIX)/sbin/flowbulk $(DESTDIR)$(PREFIX)/share/man/man8/flowbulk.8 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/flowbulk
	rm -rf $(DOCDIR)
	-rmdir -p --ignore-fail-on-non-empty $(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)$(PREFIX)/share/doc \
		$(DESTDIR)$(PREFIX)/sbin 2>/dev/null

uninstall: uninstall-userspace uninstall-module

# DKMS: the sources into /usr/src/nf_flow_bulk-VERSION, registered, built and
# installed for KVER; from then on dkms rebuilds the module for every new
# kernel (AUTOINSTALL in dkms.conf). With DESTDIR only the sources are
# staged (a package's postinst runs dkms).
dkms-source:
	@test -n "$(VERSION)" || { echo "no NFB_VERSION in module/main.c" >&2; exit 1; }
	for f in $(DKMS_FILES); do install -D -m 0644 $$f $(DKMS_SRC)/$$f; done
	chmod 0755 $(DKMS_SRC)/module/conftest.sh

dkms: dkms-source
	@if [ -z "$(DESTDIR)" ]; then \
		dkms status -m $(NAME) -v $(VERSION) | grep -q . || dkms add -m $(NAME) -v $(VERSION); \
		dkms install -m $(NAME) -v $(VERSION) -k $(KVER); \
	fi

dkms-uninstall:
	-dkms remove -m $(NAME) -v $(VERSION) --all
	rm -rf $(DKMS_SRC)

# The Debian packages (debian/), built by dpkg-buildpackage in a copy of
# the tree's files (tracked, and new ones not ignored) in build/deb,
# so that the packages land in build/deb and the tree stays as it was.
DEB_OUT ?= $(BUILD)/deb
deb:
	rm -rf $(DEB_OUT)
	mkdir -p $(DEB_OUT)/nf-flow-bulk-$(VERSION)
	if [ "$$(git -C $(CURDIR) rev-parse --show-toplevel 2>/dev/null)" = "$(CURDIR)" ]; then \
		git -C $(CURDIR) ls-files -co --exclude-standard -z | \
			(cd $(CURDIR) && xargs -0 cp --parents -t $(DEB_OUT)/nf-flow-bulk-$(VERSION)); \
	else \
		tar -C $(CURDIR) --exclude=./build -cf - . | tar -C $(DEB_OUT)/nf-flow-bulk-$(VERSION) -xf -; \
	fi
	cd $(DEB_OUT)/nf-flow-bulk-$(VERSION) && dpkg-buildpackage -us -uc -b -j$(JOBS)
	@ls $(DEB_OUT)/*.deb

check:
	tools/check

lint:
	tools/lint

# Not part of check: the DKMS install test compiles the module inside a TCG
# guest (20-40 minutes), more than every other selftest together.
check-install:
	tools/setup
	tools/vm/run --kernel 6.1 --timeout 3600 -- selftests/nfb_install_dkms.sh

# Not part of check: the Debian packages installed, booted, reloaded,
# upgraded and purged in a guest (tools/check-deb); DKMS compiles the
# module twice there under TCG.
check-deb:
	tools/setup
	tools/check-deb

# The Debian 7.x kernels alone: every selftest on unstable's released 7.x
# (with no supported kernel to compare its probes with; the run that puts a
# line on the proven list), the newest line's set on the newest.
check-newest:
	NFB_KERNELS=none tools/check

# Not part of check: builds the debug kernel the first time (hours).
check-debug:
	tools/debug-kernel/check

# Not part of check: make check again and again (RUNS, default 5), each time
# in a new clone; stops at the first failure. About 40 minutes a run here.
RUNS ?= 5
check-series:
	tools/check-series -n $(RUNS)

demo:
	tools/demo

bench:
	tools/bench/run

bench-peers:
	tools/bench/run --peers --boots 2 --jobs 2 --publish

figures:
	tools/bench/figures

bench-setup:
	tools/bench/run --setup

# TCP under icount (tools/bench/icount/tcp.sh), one boot; TCP_OPTS: its options.
TCP_OPTS ?=
bench-tcp: all
	tools/vm/run --kernel $(KVER) --icount --timeout 2400 -- tools/bench/icount/tcp.sh $(TCP_OPTS)

# The four-host benchmark (tools/bench/hosts): four guests by default, or
# the real hosts of INVENTORY=file over ssh. HOSTS_OPTS: more options
# (--flows, --modes, --reps, --count, --kernel, --publish).
INVENTORY ?=
HOSTS_OPTS ?=
bench-hosts: all bench-xdp
	tools/setup
	tools/bench/hosts $(if $(INVENTORY),--inventory $(INVENTORY)) $(HOSTS_OPTS)

# RTNL hold time of the module's rescans (tools/bench/icount/rtnl.py), one icount
# guest: 100 namespaces x 4 attachments, then 10 x max_attachments (64).
RTNL_OPTS ?=
bench-rtnl: all
	tools/vm/run --kernel $(KVER) --icount --nics 0 --timeout 1800 -- \
		tools/bench/icount/rtnl.py --ns 100 --attachments 4 $(RTNL_OPTS)
	tools/vm/run --kernel $(KVER) --icount --nics 0 --timeout 1800 -- \
		tools/bench/icount/rtnl.py --ns 10 --attachments 64 $(RTNL_OPTS)

setup:
	tools/setup

clean:
	rm -rf $(BUILD)

help:
	@sed -n '3,/^$$/{/^$$/d;s/^# \{0,1\}//;p}' Makefile
