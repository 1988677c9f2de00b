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
  python3 tests/hook/gpu/torch_nccl_smoke.py --agent --collectives
      the real daemon instead of ring_dump: pulse-host-agent (no NIC, no
      netlink, --poll 100ms) finds the live process's ring in /dev/shm and
      drains it while the process runs and after it exits (no
      PULSE_HOOK_KEEP_RING); its hook_op lines must be the calls NCCL logged
      (COLL), per operation and per communicator NCCL logged (Init COMPLETE:
      rank, nranks), each once (agent_report, agent_totals)
  python3 tests/hook/gpu/torch_nccl_smoke.py --stand-in --agent   # the same,
      no GPU: a Python process loads the stand-in's training step as Python
      loads PyTorch (ctypes, RTLD_LOCAL); the stand-in NCCL writes NCCL's log
      lines; the agent looks at a directory of links to this run's rings
      (--agent-shm: at all of /dev/shm); make test

World size 1 makes NCCL use no network at all: no QP and no net record is
expected there, and the report says so rather than failing.
Build first: make build/lib/libpulse-hook.so build/lib/libpulse-nccl-profiler.so
build/tests/hook/ring_dump (or plain `make`); --agent also needs
build/bin/pulse-host-agent (and, on a machine without Pulse's build
dependencies, its libraries: tests/hook/gpu/carry_libs.sh, --agent-lib-path).
"""
import argparse
import collections
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

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


def stand_in_workload(rank, world, build):
    """--stand-in --agent: the stand-in's training step (tests/hook/train.c,
    built as libtrain_module.so) in a Python process, loaded with ctypes
    (RTLD_LOCAL, NCCL a dependency of the module) as Python loads PyTorch.
    It waits for the parent's go on stdin first: the stand-in takes
    milliseconds, and without PULSE_HOOK_KEEP_RING a ring whose process
    exits before the agent attached is gone (a real job lives for far
    longer than a poll)."""
    import ctypes
    sys.stdin.readline()  # the parent closes stdin at the latest after its bounded wait
    mod = ctypes.CDLL(os.path.abspath(os.path.join(build, "tests", "hook", "libtrain_module.so")))
    argv = (ctypes.c_char_p * 4)(b"train", str(rank).encode(), str(world).encode(), b"1")
    rc = mod.train_main(4, argv)
    print("workload rank %d: the stand-in's training step %s" % (rank, "done" if rc == 0 else "FAILED (%d)" % rc),
          flush=True)
    return rc


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_children(args, build, gate=None):
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
    if args.agent:
        env.pop("PULSE_HOOK_KEEP_RING", None)  # the agent drains the ring and removes it
    else:
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
            if args.agent:
                procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--stand-in-child", str(rank),
                                               "--world", str(max(args.world, 2)), "--build", build],
                                              env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                              stderr=subprocess.STDOUT, text=True))
                continue
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
    if gate:
        gate(procs)
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


def checker(checks):
    """A check(cond, what) that prints PASS/FAIL and appends to checks."""
    def check(cond, what):
        checks.append(bool(cond))
        print("  %s %s" % ("PASS" if cond else "FAIL", what))
    return check


def process_header(title, out, shown):
    """The report's head: the process, and its output lines that shown() keeps."""
    print("=" * 78)
    print(title)
    for l in out.splitlines():
        if shown(l):
            print("  | " + l[:160])


def report(pid, rc, out, recs, args):
    checks = []
    check = checker(checks)
    process_header("process %d (exit %d)" % (pid, rc), out,
                   lambda l: ("workload" in l or "profiler" in l.lower() or "NET/IB" in l or "NET/Socket" in l
                              or l.startswith("fake-nccl: profiler") or "Using network" in l))
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


AGENT_POLL_S = 0.1  # --poll 100ms


class Agent:
    """pulse-host-agent with no NIC (--netdev lo), no netlink, its lines to a
    file and its log to another. It looks for rings in /dev/shm, as on a
    real host, unless given a directory of links (the stand-in in make test:
    other tests' rings in /dev/shm are not ours to drain)."""

    def __init__(self, build, work, hook_dir=None, lib_path=None):
        self.exe = os.path.join(build, "bin", "pulse-host-agent")
        self.out = os.path.join(work, "agent.jsonl")
        self.log = os.path.join(work, "agent.log")
        self.hook_dir = hook_dir
        self.cmd = [self.exe, "--netdev", "lo", "--no-netlink", "--poll", "%dms" % (AGENT_POLL_S * 1000),
                    "--lock-dir", work, "--out", self.out, "--log", self.log]
        if hook_dir:
            self.cmd += ["--hook-dir", hook_dir]
        self.env = dict(os.environ)
        for k in ("LD_PRELOAD", "NCCL_PROFILER_PLUGIN"):  # the agent is no training process
            self.env.pop(k, None)
        if lib_path:  # its libraries, carried to a machine without Pulse's build dependencies
            self.env["LD_LIBRARY_PATH"] = os.path.abspath(lib_path) + (
                ":" + self.env["LD_LIBRARY_PATH"] if self.env.get("LD_LIBRARY_PATH") else "")
        self.proc = None
        self.rc = None

    def log_text(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def start(self, timeout=10.0):
        """Starts it and waits (bounded) for its "started" line; False if it did not get there."""
        if not os.path.exists(self.exe):
            sys.exit("torch_nccl_smoke: %s not built (make %s)" % (self.exe, self.exe))
        print("agent: %s" % " ".join(self.cmd))
        self.proc = subprocess.Popen(self.cmd, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(self.log + ".stderr", "w"))
        return self.wait_log(lambda t: " info: started: " in t, timeout)

    def wait_log(self, cond, timeout):
        """Polls the log until cond(text) holds, the agent exits, or timeout; returns cond's last value."""
        end = time.monotonic() + timeout
        while True:
            ok = cond(self.log_text())
            if ok or self.proc.poll() is not None or time.monotonic() > end:
                return ok
            time.sleep(0.02)

    def stop(self, timeout=10.0):
        """SIGTERM, then (bounded) its exit; SIGKILL if it does not stop. Returns its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                print("agent: did not stop within %.0f s of SIGTERM: killed" % timeout)
        self.rc = self.proc.returncode
        return self.rc

    def lines(self):
        recs = []
        try:
            with open(self.out) as f:
                for l in f:
                    if l.strip():
                        try:
                            recs.append(json.loads(l))
                        except ValueError:
                            recs.append({"type": "unparsable", "line": l[:200]})
        except OSError:
            pass
        return recs


def attached_re(pid):
    return re.compile(r" hook ring of pid %d attached \(" % pid)


def dropped_re(pid):
    return re.compile(r" hook ring of pid %d dropped: the process exited \((\d+) records written, (\d+) dropped(.*)\)"
                      % pid)


def stand_in_gate(agent, links):
    """--stand-in --agent: before each child's first NCCL call, the agent has its ring.
    With a links directory, each ring is linked there once the hook has made it."""
    def gate(procs):
        for p in procs:
            ring = "/dev/shm/pulse-hook.%d" % p.pid
            if links:
                end = time.monotonic() + 10
                while not os.path.exists(ring) and p.poll() is None and time.monotonic() < end:
                    time.sleep(0.01)
                if os.path.exists(ring):
                    os.symlink(ring, os.path.join(links, "pulse-hook.%d" % p.pid))
            agent.wait_log(lambda t: attached_re(p.pid).search(t), 10)
            try:  # go (EOF at the latest)
                p.stdin.write("go\n")
                p.stdin.close()
            except OSError:
                pass
            p.stdin = None
    return gate


def nccl_log_comms(out):
    """NCCL's own log, in order: the communicators ("Init COMPLETE": rank,
    nranks, commId for a new one, none for a split) and the calls on each
    (COLL: "NAME: opCount ... comm PTR [nranks=N]"). A pointer names the
    communicator last made at that address."""
    comms, by_ptr = [], {}
    init_re = re.compile(r"NCCL INFO (\w+) comm (0x[0-9a-f]+) rank (\d+) nranks (\d+) (.*)- Init COMPLETE")
    call_re = re.compile(r"NCCL INFO (\w+): opCount [0-9a-fx]+ .* comm (0x[0-9a-f]+|\(nil\)) \[nranks=(\d+)\]")
    orphans = collections.Counter()
    for l in out.splitlines():
        m = init_re.search(l)
        if m:
            cid = re.search(r"commId (0x[0-9a-f]+)", m.group(5))
            c = {"func": m.group(1), "ptr": m.group(2), "rank": int(m.group(3)), "nranks": int(m.group(4)),
                 "commId": int(cid.group(1), 16) if cid else None, "calls": collections.Counter()}
            comms.append(c)
            by_ptr[c["ptr"]] = c
            continue
        m = call_re.search(l)
        if m:
            name = NCCL_LOG_NAMES.get(m.group(1), m.group(1))
            c = by_ptr.get(m.group(2))
            if c:
                c["calls"][name] += 1
            else:
                orphans[name] += 1
    return comms, orphans


def hex_id(v):
    return int(v, 16) if isinstance(v, str) else v


def agent_report(pid, rc, out, agent, lines, args, ring_left):
    """The agent's view of one workload process, against NCCL's own log."""
    checks = []
    check = checker(checks)
    process_header("process %d (exit %d), through pulse-host-agent" % (pid, rc), out,
                   lambda l: ("workload" in l or "Using network" in l or "PROFILER/Plugin" in l
                              or l.startswith("fake-nccl: profiler")))
    log = agent.log_text()
    att = attached_re(pid).search(log)
    drop = dropped_re(pid).search(log)
    check(att, "agent: attached the process's ring while it ran (%s)"
          % (log[att.start():log.find("\n", att.start())].strip() if att else "no 'hook ring of pid %d attached' line" % pid))
    check(drop and drop.group(2) == "0" and not drop.group(3),
          "agent: drained it a last time after the exit, nothing dropped (%s)"
          % (drop.group(0).strip() if drop else "no 'hook ring of pid %d dropped' line" % pid))
    check(not re.search(r"hook ring \S*pulse-hook\.%d: cannot attach" % pid, log), "agent: no attach error for it")
    check(not ring_left, "agent: removed its ring once drained")

    ops = [l for l in lines if l.get("type") == "hook_op" and l.get("pid") == pid]
    calls = [l for l in ops if not l.get("annotation")]
    annots = [l for l in ops if l.get("annotation")]
    groups = [l for l in lines if l.get("type") == "hook_group" and l.get("pid") == pid and l.get("source") == "hook"]
    comms = {}  # comm_id -> its last state in the agent's hook_map lines
    for m in lines:
        if m.get("type") == "hook_map":
            for c in m.get("comms", []):
                if c.get("pid") == pid:
                    comms[hex_id(c["comm_id"])] = c
    hook_comms = sorted((c for c in comms.values() if c.get("source") == "hook"), key=lambda c: c.get("t_ns", 0))
    print("agent lines for pid %d: %d hook_op (%d calls, %d profiler annotations), %d hook_group, %d communicators"
          % (pid, len(ops), len(calls), len(annots), len(groups), len(comms)))
    for c in hook_comms:
        print("  comm %s rank %d/%d how %s nccl_hash %s gpu %s%s"
              % (c["comm_id"], c["rank"], c["nranks"], c["how"], c.get("nccl_hash"),
                 (c.get("gpu") or {}).get("pci_bus_id"), " destroyed" if c.get("destroyed") else ""))
    for o in calls:
        print("  hook_op %-13s comm %s seq %d count %d root/peer %d group %d"
              % (o["op"], o["comm_id"], o["seq"], o["count"], o["root_peer"], o["group_id"]))

    agent_calls = collections.Counter(o["op"] for o in calls)
    logged = nccl_logged_calls(out)
    print("  NCCL's own log (COLL) against the agent's hook_op lines:")
    for name in sorted(set(logged) | set(agent_calls)):
        print("    %-14s NCCL logged %3d, agent wrote %3d" % (name, logged[name], agent_calls[name]))
    check(sum(logged.values()) > 0 and agent_calls == logged,
          "agent: its hook_op lines are the calls NCCL logged, per operation (%d logged, %d lines)%s"
          % (sum(logged.values()), len(calls), "" if logged else ": NCCL logged none (NCCL_DEBUG_SUBSYS without COLL?)"))
    keys = collections.Counter((hex_id(o["comm_id"]), o["seq"]) for o in calls)
    twice = [k for k, n in keys.items() if n > 1]
    check(not twice, "agent: no operator twice (communicator, seq) over %d calls%s"
          % (len(calls), "" if not twice else ": %d repeated, e.g. %s" % (len(twice), twice[:3])))
    if not args.no_plugin:
        check(all(o["source"] == "profiler" for o in annots) and not any(o["source"] == "profiler" for o in calls),
              "agent: the profiler's %d operator lines are all annotations (not counted as calls)" % len(annots))
    starts = sum(1 for g in groups if g["event"] == "start")
    ends = sum(1 for g in groups if g["event"] == "end")
    check(starts >= 1 and starts == ends, "agent: group brackets (%d start, %d end)" % (starts, ends))

    ncomms, orphans = nccl_log_comms(out)
    check(ncomms and len(hook_comms) == len(ncomms),
          "agent: the communicators NCCL made (%d 'Init COMPLETE') are in its map (%d of pid %d: %s)"
          % (len(ncomms), len(hook_comms), pid, ", ".join(c["how"] for c in hook_comms)))
    unknown = sorted({o["comm_id"] for o in calls if hex_id(o["comm_id"]) not in comms})
    check(not unknown, "agent: every hook_op names a communicator of its map%s"
          % ("" if not unknown else " (not: %s)" % ", ".join(unknown)))
    if orphans:
        print("  NOTE NCCL logged %d call(s) on a communicator it logged no init of: %s"
              % (sum(orphans.values()), dict(orphans)))
    # NCCL's communicator -> the agent's: by NCCL's commId (= commHash, which the
    # plugin gives the map as nccl_hash), else (splits: NCCL logs no commId) in order
    pairs, left = [], list(hook_comms)
    for nc in ncomms:
        match = [c for c in left if nc["commId"] is not None and hex_id(c.get("nccl_hash")) == nc["commId"]]
        if match:
            pairs.append((nc, match[0], "commId"))
            left.remove(match[0])
        else:
            pairs.append((nc, None, None))
    for i, (nc, ac, how) in enumerate(pairs):
        if ac is None and left:
            pairs[i] = (nc, left.pop(0), "order")
    by_comm = collections.defaultdict(collections.Counter)
    for o in calls:
        by_comm[hex_id(o["comm_id"])][o["op"]] += 1
    for nc, ac, how in pairs:
        what = "NCCL comm %s (%s, rank %d/%d%s)" % (nc["ptr"], nc["func"], nc["rank"], nc["nranks"],
                                                   ", commId 0x%x" % nc["commId"] if nc["commId"] is not None else "")
        if ac is None:
            check(False, "agent: %s has no communicator in the agent's map" % what)
            continue
        rank_ok = ac["rank"] == nc["rank"] or (ac["rank"] == -1 and args.no_plugin and ac["how"] in ("split", "shrink"))
        check(rank_ok and ac["nranks"] in (nc["nranks"], -1 if args.no_plugin else nc["nranks"]),
              "agent: %s is comm %s (matched by %s): rank %d/%d" % (what, ac["comm_id"], how, ac["rank"], ac["nranks"]))
        got = by_comm.get(hex_id(ac["comm_id"]), collections.Counter())
        check(got == nc["calls"], "agent: the calls on it: NCCL %s, agent %s"
              % (dict(sorted(nc["calls"].items())), dict(sorted(got.items()))))
    check(rc == 0, "workload exit 0")
    if not all(checks):
        print("  the process's last output lines:")
        for l in out.splitlines()[-40:]:
            print("  | " + l[:200])
    return checks


def agent_totals(agent, lines, pids):
    """The agent's own accounts, once it stopped: its counters line against its lines."""
    checks = []
    check = checker(checks)
    print("=" * 78)
    log = agent.log_text()
    m = re.search(r"hook rings: (\d+) attached, (\d+) detached, (\d+) records drained \((\d+) operators\), "
                  r"(\d+) dropped, (\d+) attach errors", log)
    print("agent: exit %s; %s" % (agent.rc, m.group(0) if m else "no counters line"))
    check(agent.rc == 0, "agent: stopped on SIGTERM with exit 0")
    check(m, "agent: its counters line 'hook rings: ... attached ... records drained'")
    if m:
        att, det, recs, nops, dropped, errs = (int(x) for x in m.groups())
        n_op_lines = sum(1 for l in lines if l.get("type") == "hook_op")
        check(att >= len(pids) and det == att, "agent: %d ring(s) attached, %d detached (%d workload process(es))"
              % (att, det, len(pids)))
        written = sum(int(x.group(1)) for x in re.finditer(r" dropped: the process exited \((\d+) records written", log))
        check(recs == written, "agent: %d records drained = %d written by the rings it dropped" % (recs, written))
        check(nops == n_op_lines, "agent: %d operators counted = %d hook_op lines written" % (nops, n_op_lines))
        check(dropped == 0 and errs == 0, "agent: %d records dropped, %d attach errors" % (dropped, errs))
    bad = [l for l in lines if l.get("type") == "unparsable"]
    check(not bad, "agent: every line is JSON%s" % ("" if not bad else " (not: %s)" % bad[0]["line"]))
    try:
        with open(agent.log + ".stderr", errors="replace") as f:
            err = f.read().strip()
    except OSError:
        err = ""
    if err:  # its log goes to --log; a library may still write here (e.g. libibverbs' warnings)
        print("  NOTE the agent's stderr:")
        for l in err.splitlines()[-10:]:
            print("  | " + l[:200])
    if not all(checks):
        print("  the agent's log:")
        for l in log.splitlines()[-40:]:
            print("  | " + l[:200])
    return checks


def run_agent(args):
    """--agent: the agent, the workload, the agent's lines against NCCL's log."""
    work = tempfile.mkdtemp(prefix="pulse-torch-smoke.")
    links = None
    if args.stand_in and not args.agent_shm:
        links = os.path.join(work, "rings")
        os.mkdir(links)
    agent = Agent(args.build, work, links, args.agent_lib_path)
    results, pids, left = [], [], []
    try:
        if not agent.start():
            print("agent: did not start (exit %s); its log:" % agent.proc.poll())
            for l in (agent.log_text() + open(agent.log + ".stderr").read()).splitlines()[-30:]:
                print("  | " + l[:200])
            return [False]
        outs = run_children(args, args.build, stand_in_gate(agent, links) if args.stand_in else None)
        pids = [pid for pid, _, _ in outs]
        # drained: each exited process's ring dropped (a poll notices the exit); bounded
        agent.wait_log(lambda t: all(dropped_re(p).search(t) for p in pids), 50 * AGENT_POLL_S)
        agent.stop()
        left = [p for p in pids if os.path.exists("/dev/shm/pulse-hook.%d" % p)]
        lines = agent.lines()
        others = collections.Counter(l.get("pid") for l in lines if l.get("type") == "hook_op" and l.get("pid") not in pids)
        for pid, rc, out in outs:
            if args.child_log:
                with open(os.path.join(args.child_log, "child-%d.log" % pid), "w") as f:
                    f.write(out)
            results += agent_report(pid, rc, out, agent, lines, args, pid in left)
        if others:
            print("NOTE hook_op lines of other processes (not checked): %s" % dict(others))
        results += agent_totals(agent, lines, pids)
    finally:
        if agent.proc and agent.proc.poll() is None:
            agent.stop()
        if args.child_log and os.path.exists(agent.log):
            for f in (agent.log, agent.out):
                if os.path.exists(f):
                    shutil.copy(f, os.path.join(args.child_log, "agent-%d.%s" % (agent.proc.pid, f.rsplit(".", 1)[1])))
        for p in left:  # a ring the agent left behind is not left on the machine
            try:
                os.unlink("/dev/shm/pulse-hook.%d" % p)
            except OSError:
                pass
        shutil.rmtree(work, ignore_errors=True)
    return results


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
    ap.add_argument("--agent", action="store_true",
                    help="pulse-host-agent (BUILD/bin) drains the rings instead of ring_dump, and its lines are checked")
    ap.add_argument("--agent-lib-path", metavar="DIR",
                    help="with --agent: put DIR first on the agent's LD_LIBRARY_PATH (only the agent's: libraries "
                         "carried by tests/hook/gpu/carry_libs.sh to a machine without Pulse's build dependencies)")
    ap.add_argument("--agent-shm", action="store_true",
                    help="with --stand-in --agent: the agent looks at all of /dev/shm, as it does with the real NCCL, "
                         "instead of a directory of links to this run's rings (it would drain and remove the rings "
                         "of other tests running beside it: not in make test)")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--stand-in-child", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stand_in_child is not None:
        return stand_in_workload(args.stand_in_child, args.world, args.build)
    if args.stand_in and (args.collectives or args.groups):
        ap.error("--collectives and --groups need the real NCCL (the stand-in's workload is fixed)")
    if args.agent and args.no_hook:
        ap.error("--agent checks the hook's operator records: not with --no-hook")
    if (args.agent_lib_path or args.agent_shm) and not args.agent:
        ap.error("--agent-lib-path and --agent-shm go with --agent")
    if args.agent_shm and not args.stand_in:
        ap.error("--agent-shm is for --stand-in (with the real NCCL the agent always looks at /dev/shm)")
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
    if args.agent:
        results = run_agent(args)
        print("=" * 78)
        print("torch_nccl_smoke: %d checks, %d failed" % (len(results), results.count(False)))
        return 0 if all(results) else 1
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
