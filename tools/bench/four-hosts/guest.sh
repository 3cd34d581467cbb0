#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# One of the four hosts of the four-guest benchmark (tools/bench/hosts),
# run in the guest by tools/vm/run:
#
#   tools/bench/four-hosts/guest.sh ROLE DIR
#
# Makes the guest a host like any other: its name, the user-mode NIC
# (tools/vm/run --ssh-port) at 10.254.254.15, and an OpenSSH server (the host's
# binary) that lets in the key DIR/ssh/id.pub. Writes DIR/ROLE.ifaces, the
# names of its link devices in the order tools/bench/hosts gave their MAC
# addresses (DIR/ROLE.macs), and DIR/ROLE.ready; then waits until DIR/stop
# exists. From there on tools/bench/hosts drives it over ssh only, as it
# drives real hosts.
set -eu

role=${1:?role}
dir=${2:?directory}
repo=$(cd "$(dirname "$0")/../../.." && pwd)

cleanup() {
	[ ! -s /run/sshd.pid ] || kill "$(cat /run/sshd.pid)" 2>/dev/null || true
}
trap cleanup EXIT

hostname "$role"
mgmt=$("$repo/tools/vm/nic" 52:54:00:fc:00:01)
ip link set lo up
ip addr add 10.254.254.15/24 dev "$mgmt"
ip link set "$mgmt" up

names=()
while read -r mac; do
	names+=("$("$repo/tools/vm/nic" "$mac")")
done <"$dir/$role.macs"

mkdir -p /run/sshd /root/.ssh
# Debian's bash reads ~/.bashrc for every ssh command, and the host's root
# may have a slow one (pyenv init: four seconds a command in a guest).
# This empties the guest's copy only (the overlay).
: >/root/.bashrc
chmod 700 /root/.ssh
cp "$dir/ssh/id.pub" /root/.ssh/authorized_keys
# sshd refuses a host key others can read; the 9p mount shows the host's
# modes, so it gets a copy of its own.
install -m 600 "$dir/ssh/host_key" /run/sshd-host-key
cat >/run/sshd_config <<EOF
ListenAddress 10.254.254.15
Port 22
HostKey /run/sshd-host-key
PidFile /run/sshd.pid
PermitRootLogin prohibit-password
AuthorizedKeysFile /root/.ssh/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
MaxSessions 64
MaxStartups 64
EOF
/usr/sbin/sshd -f /run/sshd_config -E "$dir/$role.sshd.log"

printf '%s\n' "${names[@]}" >"$dir/$role.ifaces"
: >"$dir/$role.ready"
echo "$role: ready (${names[*]})"
# Woken by tools/bench/hosts, which creates DIR/stop when it is done.
while [ ! -e "$dir/stop" ]; do
	sleep 1
done
echo "$role: stopping"
