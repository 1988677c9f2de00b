#!/usr/bin/env python3
"""Pulse interception against the real NCCL, through PyTorch (issue #5).

Runs a small torch.distributed NCCL workload (world size 1 by default: five
all-reduces and one grouped send/recv to itself) in a child process under
  LD_PRELOAD=libpulse-hook.so  and  NCCL_PROFILER_PLUGIN=libpulse-nccl-profiler.so,
then reads the child's interception ring (/dev/shm/pulse-hook.<pid>) with
build/tests/hook/ring_dump and prints what was captured: communicators,
operators, group brackets, QPs, the profiler's view (commHash, seqNumber,
algo, proto, nChannels) and its net records (QPNs per operator). It ends
with PASS/FAIL lines for what must be there and exits 1 if any failed.

  python3 tests/hook/gpu/torch_nccl_smoke.py                 # one GPU
  python3 tests/hook/gpu/torch_nccl_smoke.py --world 2       # two GPUs on one
      host, P2P and SHM disabled so NCCL goes through the RDMA NIC (verbs QPs,
      net profiling): only where an RDMA NIC is present
  python3 tests/hook/gpu/torch_nccl_smoke.py --stand-in      # no GPU: the same
      capture and report on the stand-in NCCL (tests/hook/train); make test

World size 1 makes NCCL use no network at all: no QP and no net record is
expected there, and the report says so rather than failing.
Build first: make build/lib/libpulse-hook.so build/lib/libpulse-nccl-profiler.so
build/tests/hook/ring_dump (or plain `make`).
"""
import argparse
import collections
import json
import os
import re
import socket
import subprocess
import sys

OP_NAMES = {1: "allreduce", 2: "allgather", 3: "reducescatter", 4: "broadcast", 5: "reduce",
            6: "alltoall", 7: "send", 8: "recv", 15: "other"}
HOW = {1: "init_rank", 2: "init_rank_config", 3: "init_all", 4: "split", 5: "init_rank_scalable",
       6: "destroy", 7: "abort", 8: "profiler"}
F_ANNOTATION = 1


def workload(rank, world, port, n_allreduce, collectives=False, groups=False):
    """The training-side code: plain PyTorch, nothing of Pulse."""
    import torch
    import torch.distributed as dist
    torch.cuda.set_device(rank)
    # --groups: bound to its device at init (eager NCCL init), as split_group
    # needs, and with which PyTorch makes new groups by ncclCommSplit
    extra = {"device_id": torch.device("cuda", rank)} if groups else {}
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=world, **extra)
    x = torch.ones(1 << 20, device="cuda")
    for _ in range(n_allreduce):
        dist.all_reduce(x)
    peer_to, peer_from = (rank + 1) % world, (rank - 1 + world) % world
    s = torch.full((4096,), float(rank), device="cuda")
    r = torch.empty(4096, device="cuda")
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, s, peer_to), dist.P2POp(dist.irecv, r, peer_from)])
    for q in reqs:
        q.wait()
    torch.cuda.synchronize()
    ok = abs(x[0].item() - world ** n_allreduce) < 1e-3 and abs(r[0].item() - peer_from) < 1e-3
    what = "%d all-reduces and a send/recv group" % n_allreduce
    if collectives:
        # One call of each other collective PyTorch maps onto NCCL, results checked.
        n = 1 << 16
        ag = torch.empty(world * n, device="cuda")
        dist.all_gather_into_tensor(ag, torch.full((n,), float(rank + 1), device="cuda"))
        rs = torch.empty(n, device="cuda")
        dist.reduce_scatter_tensor(rs, torch.ones(world * n, device="cuda"))
        b = torch.full((n,), float(rank + 7), device="cuda")
        dist.broadcast(b, src=0)
        red = torch.ones(n, device="cuda")
        dist.reduce(red, dst=0)
        a2a_in = torch.full((world * n,), float(rank), device="cuda")
        a2a_out = torch.empty(world * n, device="cuda")
        dist.all_to_all_single(a2a_out, a2a_in)
        torch.cuda.synchronize()
        ok = ok and abs(ag[-1].item() - world) < 1e-3 and abs(rs[0].item() - world) < 1e-3 \
            and abs(b[0].item() - 7) < 1e-3 and (rank != 0 or abs(red[0].item() - world) < 1e-3) \
            and abs(a2a_out[-1].item() - (world - 1)) < 1e-3
        what += ", an all-gather, a reduce-scatter, a broadcast, a reduce and an all-to-all"
    if groups:
        # Communicators beyond the default one, as frameworks make them: a
        # new group (its own communicator, or a split of the default one)
        # and a split group, each used once.
        g = dist.new_group(list(range(world)))
        y = torch.ones(1 << 12, device="cuda")
        dist.all_reduce(y, group=g)
        made = 1
        if hasattr(dist, "split_group"):
            sg = dist.split_group(split_ranks=[list(range(world))])
            if sg is not None:
                dist.all_reduce(y, group=sg)
                made += 1
        torch.cuda.synchronize()
        ok = ok and abs(y[0].item() - world ** made) < 1e-3
        what += ", %d more group(s) with an all-reduce each" % made
    print("workload rank %d: %s done, results %s" % (rank, what, "correct" if ok else "WRONG"), flush=True)
    dist.destroy_process_group()
    return 0 if ok else 1


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_children(args, build):
    hook = os.path.abspath(os.path.join(build, "lib", "libpulse-hook.so"))
    plugin = os.path.abspath(os.path.join(build, "lib", "libpulse-nccl-profiler.so"))
    for f in (hook, plugin):
        if not os.path.exists(f):
            sys.exit("torch_nccl_smoke: %s not built (run make)" % f)
    env = dict(os.environ)
    if not args.no_hook:
        env["LD_PRELOAD"] = hook
    if not args.no_plugin:
        env["NCCL_PROFILER_PLUGIN"] = plugin
    env["PULSE_HOOK_KEEP_RING"] = "1"  # the ring outlives the process, for ring_dump
    env.setdefault("NCCL_DEBUG", "INFO")
    # COLL: NCCL logs every collective and P2P call it receives, the ground
    # truth the hook's records are compared with (nccl_logged_calls)
    env.setdefault("NCCL_DEBUG_SUBSYS", "INIT,NET,COLL")
    procs = []
    if args.stand_in:
        hdir = os.path.abspath(os.path.join(build, "tests", "hook"))
        env["LD_LIBRARY_PATH"] = hdir
        env["FAKE_NCCL_UID"] = "torch-smoke"
        for rank in range(args.world):
            procs.append(subprocess.Popen([os.path.join(hdir, "train"), str(rank), str(max(args.world, 2)), "1"],
                                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    else:
        if args.world > 1:
            env.setdefault("NCCL_P2P_DISABLE", "1")  # force the network path between the two GPUs
            env.setdefault("NCCL_SHM_DISABLE", "1")
        port = free_port()
        for rank in range(args.world):
            procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", str(rank),
                                           "--world", str(args.world), "--port", str(port),
                                           "--allreduces", str(args.allreduces)]
                                          + (["--collectives"] if args.collectives else [])
                                          + (["--groups"] if args.groups else []),
                                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = []
    for p in procs:
        out, _ = p.communicate(timeout=600)
        outs.append((p.pid, p.returncode, out))
    return outs


def dump_ring(build, pid):
    tool = os.path.join(build, "tests", "hook", "ring_dump")
    if not os.path.exists(tool):
        sys.exit("torch_nccl_smoke: %s not built (make %s)" % (tool, tool))
    res = subprocess.run([tool, str(pid), "--unlink"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if res.returncode != 0:
        return None, res.stderr.strip()
    return [json.loads(l) for l in res.stdout.splitlines() if l.strip()], ""


NCCL_LOG_NAMES = {"AllReduce": "allreduce", "AllGather": "allgather", "ReduceScatter": "reducescatter",
                  "Broadcast": "broadcast", "Reduce": "reduce", "AlltoAll": "alltoall", "Send": "send",
                  "Recv": "recv"}


def nccl_logged_calls(out):
    """The calls NCCL itself logged (NCCL_DEBUG=INFO, subsystem COLL: one
    'NAME: opCount N ...' line per call it received), by operator name."""
    calls = collections.Counter()
    for m in re.finditer(r"NCCL INFO (\w+): opCount ", out):
        calls[NCCL_LOG_NAMES.get(m.group(1), m.group(1))] += 1
    return calls


def nccl_logged_inits(out):
    """Communicators NCCL says it made (NCCL_DEBUG=INFO, INIT: one '... Init COMPLETE' line each)."""
    return len(re.findall(r"NCCL INFO \w+ comm 0x[0-9a-f]+ rank \d+ nranks \d+ .*Init COMPLETE", out))


def report(pid, rc, out, recs, args):
    checks = []

    def check(cond, what):
        checks.append(bool(cond))
        print("  %s %s" % ("PASS" if cond else "FAIL", what))

    print("=" * 78)
    print("process %d (exit %d)" % (pid, rc))
    for l in out.splitlines():
        if ("workload" in l or "profiler" in l.lower() or "NET/IB" in l or "NET/Socket" in l
                or l.startswith("fake-nccl: profiler") or "Using network" in l):
            print("  | " + l[:160])
    if recs is None:
        check(False, "interception ring readable")
        return checks
    stats = recs[-1] if recs and recs[-1]["kind"] == "stats" else {}
    recs = [r for r in recs if r["kind"] != "stats"]
    hook = [r for r in recs if r["source"] == "hook"]
    prof = [r for r in recs if r["source"] == "profiler"]
    print("ring: %d records (%d from the hook, %d from the profiler plugin), dropped %s/%s, hook loaded %s"
          % (len(recs), len(hook), len(prof), stats.get("dropped_full"), stats.get("dropped_no_reader"),
             stats.get("hook_loaded")))
    print("communicators:")
    for r in recs:
        if r["kind"] in ("comm_init", "comm_destroy"):
            print("  %-12s %-8s comm_id %s rank %d/%d how %s nccl_hash %s nnodes %d gpu %s %s%s"
                  % (r["kind"], r["source"], r["comm_id"], r["rank"], r["nranks"], HOW.get(r["how"], r["how"]),
                     r["nccl_hash"], r["nnodes"], r["cuda_dev"], r["pci_bus_id"],
                     " (annotation)" if r["flags"] & F_ANNOTATION else ""))
    print("operators (hook: the calls; profiler: NCCL's view, annotations when the hook is loaded):")
    for r in recs:
        if r["kind"] == "op":
            print("  %-8s %-13s comm %s seq %d count %d dtype %d peer/root %d group %d nccl_seq %d %s/%s ch %d"
                  % (r["source"], OP_NAMES.get(r["type"], r["type"]), r["comm_id"], r["seq"], r["count"],
                     r["datatype"], r["root_peer"], r["group_id"], r["nccl_seq"], r["algo"], r["proto"],
                     r["nchannels"]))
        elif r["kind"] in ("group_start", "group_end"):
            print("  %-8s %s %d depth %d" % (r["source"], r["kind"], r["group_id"], r["depth"]))
    qps = [r for r in recs if r["kind"].startswith("qp_")]
    print("QPs (verbs, through the hook): %d records" % len(qps))
    for r in qps:
        print("  %-10s dev %s qpn %d dest_qpn %d port %d result %d gpu %s"
              % (r["kind"], r["dev"], r["qpn"], r["dest_qpn"], r["port"], r["result"], r["pci_bus_id"]))
    nets = [r for r in recs if r["kind"] == "net_qp"]
    print("net records (profiler: QPN per operator, channel, direction): %d" % len(nets))
    for r in nets[:40]:
        print("  comm %s seq %d nccl_seq %d %s ch %d %s peer %d qpn %d dev %d wrs %d bytes %d"
              % (r["comm_id"], r["seq"], r["nccl_seq"], OP_NAMES.get(r["op_type"], r["op_type"]), r["channel"],
                 "send" if r["is_send"] else "recv", r["peer"], r["qpn"], r["nccl_dev"], r["wrs"], r["bytes"]))
    if len(nets) > 40:
        print("  ... %d more" % (len(nets) - 40))

    n_ar = args.allreduces if not args.stand_in else 1
    hook_ops = collections.Counter(OP_NAMES.get(r["type"]) for r in hook if r["kind"] == "op")
    prof_ops = collections.Counter(OP_NAMES.get(r["type"]) for r in prof if r["kind"] == "op")
    if not args.no_hook:
        check(any(r["kind"] == "comm_init" for r in hook), "hook: communicator init recorded")
        check(hook_ops["allreduce"] >= n_ar, "hook: %d all-reduce calls recorded (>= %d)" % (hook_ops["allreduce"], n_ar))
        check(hook_ops["send"] >= 1 and hook_ops["recv"] >= 1, "hook: send and recv recorded (%d, %d)"
              % (hook_ops["send"], hook_ops["recv"]))
        check(any(r["kind"] == "group_start" for r in hook), "hook: group brackets recorded")
        logged = nccl_logged_calls(out) if not args.stand_in else collections.Counter()
        if logged:
            # What NCCL says it was called with, against what the hook recorded.
            # A call PyTorch makes through NCCL's internals, or skips for a
            # one-rank group, is in neither.
            print("  NCCL's own log (COLL) against the hook's records:")
            for name in sorted(set(logged) | set(hook_ops)):
                print("    %-14s NCCL logged %3d, hook recorded %3d" % (name, logged[name], hook_ops[name]))
            check(all(hook_ops[n] >= logged[n] for n in logged),
                  "hook: every call NCCL logged was recorded (%d logged)" % sum(logged.values()))
        inits = nccl_logged_inits(out) if not args.stand_in else 0
        if inits:
            hook_inits = sum(1 for r in hook if r["kind"] == "comm_init")
            check(hook_inits == inits, "hook: every communicator NCCL made was recorded (NCCL %d, hook %d: %s)"
                  % (inits, hook_inits, ", ".join(sorted(HOW.get(r["how"], str(r["how"])) for r in hook
                                                         if r["kind"] == "comm_init"))))
        if args.collectives:
            for name in ("allgather", "reducescatter", "broadcast", "reduce"):
                if logged and logged[name] == 0 and hook_ops[name] == 0:
                    print("  NOTE %s: NCCL was never called for it (PyTorch did it without NCCL)" % name)
                    continue
                check(hook_ops[name] >= 1, "hook: %s recorded (%d)" % (name, hook_ops[name]))
            # PyTorch runs all_to_all_single as ncclAlltoAll where NCCL has it, else as a
            # group of send/recv pairs (one more than the send/recv group above).
            check(hook_ops["alltoall"] >= 1 or (hook_ops["send"] >= 2 and hook_ops["recv"] >= 2),
                  "hook: all-to-all recorded (alltoall %d, send %d, recv %d)"
                  % (hook_ops["alltoall"], hook_ops["send"], hook_ops["recv"]))
    if not args.no_plugin:
        check(prof, "profiler plugin loaded by NCCL and writing (%d records)" % len(prof))
        if args.stand_in or args.world > 1:
            check(prof_ops["allreduce"] >= n_ar, "profiler: %d all-reduce tasks (>= %d)"
                  % (prof_ops["allreduce"], n_ar))
        else:
            # NCCL runs a collective of a one-rank communicator as a local copy
            # (ncclLaunchOneRank) and makes no task of it, so the plugin sees
            # only the send/recv (seen on NCCL 2.28.9: 0 all-reduce tasks).
            check(prof_ops["send"] >= 1 and prof_ops["recv"] >= 1,
                  "profiler: send and recv tasks (%d, %d); a one-rank collective makes no task (%d all-reduce)"
                  % (prof_ops["send"], prof_ops["recv"], prof_ops["allreduce"]))
        if not args.no_hook:
            hook_ids = {r["comm_id"] for r in hook if r["kind"] == "comm_init"}
            ann = [r for r in prof if r["kind"] in ("comm_init", "op", "net_qp")]
            check(ann and all(r["flags"] & F_ANNOTATION for r in ann),
                  "profiler records are annotations (not counted twice)")
            check(all(r["comm_id"] in hook_ids for r in prof if r["kind"] in ("comm_init", "op")),
                  "profiler records carry the hook's communicator ids")
        if nets or qps or args.world > 1:
            created = {r["qpn"] for r in qps if r["kind"] == "qp_create"}
            check(nets, "net profiling: NET_QP records present")
            if qps:
                check(all(r["qpn"] in created for r in nets), "net records name QPs the hook saw created")
        else:
            print("  NOTE no QP and no net record: world size 1 uses no network (expected)")
    check(rc == 0, "workload exit 0")
    check(stats.get("dropped_full", 1) == 0 and stats.get("dropped_no_reader", 1) == 0, "no record dropped")
    if not all(checks):
        print("  the process's last output lines:")
        for l in out.splitlines()[-40:]:
            print("  | " + l[:200])
    return checks


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"))
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--allreduces", type=int, default=5)
    ap.add_argument("--collectives", action="store_true",
                    help="also one all-gather, reduce-scatter, broadcast, reduce and all-to-all (real NCCL only)")
    ap.add_argument("--stand-in", action="store_true", help="the stand-in NCCL instead of PyTorch (no GPU)")
    ap.add_argument("--groups", action="store_true",
                    help="also a new group and a split group, an all-reduce on each (real NCCL only)")
    ap.add_argument("--child-log", metavar="DIR", help="write each process's whole output to DIR/child-PID.log")
    ap.add_argument("--no-hook", action="store_true")
    ap.add_argument("--no-plugin", action="store_true")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stand_in and (args.collectives or args.groups):
        ap.error("--collectives and --groups need the real NCCL (the stand-in's workload is fixed)")
    if args.child is not None:
        return workload(args.child, args.world, args.port, args.allreduces, args.collectives, args.groups)
    if not args.stand_in:
        try:
            import torch
            if not torch.cuda.is_available() or torch.cuda.device_count() < args.world:
                print("torch_nccl_smoke: needs %d CUDA GPU(s); found %d. Nothing was run (use --stand-in "
                      "to check the capture path without a GPU)." % (args.world, torch.cuda.device_count()))
                return 77
            v = torch.cuda.nccl.version()
            v = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
            print("torch %s, CUDA %s, NCCL %s (the plugin's ABI: v4 for 2.27, v5 for 2.28, v6 for 2.29+), "
                  "%d GPU(s): %s" % (torch.__version__, torch.version.cuda, v, torch.cuda.device_count(),
                                    torch.cuda.get_device_name(0)))
        except ImportError:
            print("torch_nccl_smoke: PyTorch is not installed here. Nothing was run.")
            return 77
    results = []
    for pid, rc, out in run_children(args, args.build):
        if args.child_log:
            with open(os.path.join(args.child_log, "child-%d.log" % pid), "w") as f:
                f.write(out)
        recs, err = dump_ring(args.build, pid)
        if recs is None:
            print("process %d: ring: %s" % (pid, err))
        results += report(pid, rc, out, recs, args)
    print("=" * 78)
    print("torch_nccl_smoke: %d checks, %d failed" % (len(results), results.count(False)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
