// SPDX-License-Identifier: GPL-2.0
/*
 * XDP_PASS only, for the sink's receive device in the benchmark's xdp
 * configuration: a frame that xdp_fwd redirects into a veth is received
 * by the peer's NAPI, which an XDP program on the peer turns on (as GRO
 * does on 6.1 and later; with GRO off it is the only way).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass(struct xdp_md *ctx __attribute__((unused)))
{
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
