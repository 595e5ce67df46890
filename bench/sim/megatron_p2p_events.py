#!/usr/bin/env python3
"""Run Megatron-Core's real pipeline schedules with torch stubbed out and print,
per pipeline rank, the compute tasks and point-to-point events they issue.

No torch is needed.  The Megatron source is read at run time, either from a
Megatron-LM git directory (default /work/.mirror/NVIDIA+Megatron-LM/repo, rev
HEAD; --megatron-git/--megatron-rev or MEGATRON_GIT_DIR/MEGATRON_REV) or from a
checkout (--megatron-dir or MEGATRON_DIR).  Three modules run for real:

  megatron/core/pipeline_parallel/schedules.py          (the schedule loops)
  megatron/core/pipeline_parallel/p2p_communication.py  (P2PCommunicator, incl.
                                                         _communicate/_p2p_ops)
  megatron/core/pipeline_parallel/utils.py              (is_pp_/is_vp_ stage
                                                         helpers; a transcription
                                                         is used if it won't load)

Every other torch*/transformer_engine*/nemo*/apex*/megatron* module is a stub
whose attributes are MagicMocks, with working fakes for what the real modules
need.  In the loaded schedules module, forward_step/backward_step are replaced
by recorders (so all loop logic of forward_backward_pipelining_with[out]_
interleaving runs for real).  P2PCommunicator._communicate is wrapped: the
real method still runs (torch.empty gives fresh fake tensors, the fake
torch.distributed isend/irecv/batch_isend_irecv give fake requests, so the
real code decides the request-dict keys and which requests it waits on), and
the wrapper logs one event per call.

Events (one list per rank):
  F<m>.<c> / B<m>.<c>   forward / backward of microbatch m on this rank's model
                        chunk c (index into the model list)
  C(sn=..,sp=..,rp=..,rn=..;wait|async)
                        one _communicate call, listing the parts present:
                        sn: forward task whose output is sent to the next rank,
                        sp: backward task whose input-grad is sent to the prev rank,
                        rp: forward task that later consumes the tensor received
                            from the previous rank (? if never consumed),
                        rn: backward task that later consumes the grad received
                            from the next rank (? if never consumed);
                        ;wait = the call waited inside (wait_on_reqs=True),
                        ;async = it returned its requests to the schedule.
  W(rp=F3.0)            the schedule waited on an async request (part as above);
                        a second wait on the same request is marked ;again.
_communicate calls with nothing to send or receive are dropped unless
--keep-empty (they are counted in the check summary).  --sites appends
@L<line> (the schedules.py line that issued the event).

Usage:
  megatron_p2p_events.py --schedule interleaved --P 2 --V 2 --M 4 --no-batch --overlap
  megatron_p2p_events.py --schedule 1f1b --P 3 --M 5 --text
  megatron_p2p_events.py --all > events.jsonl     (checks summary on stderr)
  megatron_p2p_events.py --check-orders           (compare with MegatronOrders.h)
"""

import argparse
import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import linecache
import os
import re
import subprocess
import sys
import types
from collections import defaultdict
from unittest.mock import MagicMock

DEFAULT_GIT_DIR = "/work/.mirror/NVIDIA+Megatron-LM/repo"
DEFAULT_ORDERS = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "unittests", "Stages", "MegatronOrders.h"
)

PP = "megatron.core.pipeline_parallel"
REAL_MODULES = {
    f"{PP}.schedules": "megatron/core/pipeline_parallel/schedules.py",
    f"{PP}.p2p_communication": "megatron/core/pipeline_parallel/p2p_communication.py",
    f"{PP}.utils": "megatron/core/pipeline_parallel/utils.py",
}
STUB_ROOTS = ("torch", "transformer_engine", "nemo", "apex", "megatron")


# ----------------------------------------------------------------------------
# Megatron source access
# ----------------------------------------------------------------------------
class Source:
    def __init__(self, tree=None, git_dir=None, rev="HEAD"):
        self.tree, self.git_dir, self.rev = tree, git_dir, rev
        if tree is None:
            out = subprocess.run(
                ["git", f"--git-dir={git_dir}", "rev-parse", f"{rev}^{{commit}}"],
                check=True, capture_output=True, text=True)
            self.commit = out.stdout.strip()
        else:
            self.commit = None

    def read(self, path):
        if self.tree is not None:
            with open(os.path.join(self.tree, path)) as f:
                return f.read()
        out = subprocess.run(["git", f"--git-dir={self.git_dir}", "show", f"{self.commit}:{path}"],
                             check=True, capture_output=True, text=True)
        return out.stdout

    def describe(self):
        return self.tree if self.tree is not None else f"{self.git_dir}@{self.commit[:12]}"


# ----------------------------------------------------------------------------
# Run state (shared by the fakes)
# ----------------------------------------------------------------------------
class State:
    def __init__(self):
        self.reset_shape(None)

    def reset_shape(self, shape):
        self.shape = shape
        self.events = {}            # rank -> [event objects]
        self.anomalies = []         # strings
        self.tensor_id = 0
        self.empty_calls = 0
        self.reqs = []              # all async requests handed back to the schedule
        self.rank = None

    def reset_rank(self, rank, P, V):
        self.rank, self.P, self.V = rank, P, V
        self.events[rank] = []
        self.fwd_count = defaultdict(int)
        self.bwd_count = defaultdict(int)
        self.fwd_inputs = {}
        self.in_comm = 0

    def log(self, ev):
        self.events[self.rank].append(ev)

    def odd(self, msg):
        self.anomalies.append(f"rank {self.rank}: {msg}")


ST = State()
SITES = {"sched_file": None}


def _site():
    """schedules.py line of the innermost frame in schedules.py."""
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename == SITES["sched_file"]:
            return f.f_lineno
        f = f.f_back
    return None


# ----------------------------------------------------------------------------
# Fake torch pieces
# ----------------------------------------------------------------------------
class FakeTensor:
    """kind: 'act' (forward output), 'grad' (backward input-grad), 'recv' (p2p buffer)."""

    def __init__(self, kind, task=None, shape=None):
        ST.tensor_id += 1
        self.id = ST.tensor_id
        self.kind, self.task, self.shape = kind, task, shape
        self.rank = ST.rank
        self.recv_event = None      # CommEvent that received into this buffer
        self.recv_part = None       # 'rp' | 'rn'
        self.fwd_consumers = []
        self.bwd_consumers = []
        self.requires_grad = True
        self._base = None
        self.grad = None

    def retain_grad(self):
        pass

    def size(self):
        return self.shape

    def __repr__(self):
        return f"<T{self.id} {self.kind} {self.task or ''}>"


class FakeSize(tuple):
    pass


class FakeModule:
    def __init__(self, *a, **k):
        pass

    def parameters(self):
        return []


class FakeProcessGroup:
    pass


class FakeAutogradFunction:
    @classmethod
    def apply(cls, *a, **k):
        raise RuntimeError("autograd Function called in the stubbed harness")


class FakeReq:
    def __init__(self, op):
        self.op = op
        self.event = None
        self.part = None
        self.waits = 0

    def wait(self):
        if ST.in_comm:
            self.waits_inside = True  # waited inside _communicate (wait_on_reqs)
            return
        ST.log(WaitEvent(self, again=self.waits > 0, site=_site()))
        self.waits += 1


class FakeP2POp:
    def __init__(self, op, tensor, peer, group=None, tag=0):
        self.op, self.tensor, self.peer = op, tensor, peer


def _fake_isend(tensor=None, dst=None, group=None, tag=0):
    return FakeReq("isend")


def _fake_irecv(tensor=None, src=None, group=None, tag=0):
    return FakeReq("irecv")


def _fake_empty(*shape, **kw):
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = tuple(shape[0])
    if not ST.in_comm:
        ST.odd("torch.empty called outside _communicate")
    return FakeTensor("recv", shape=tuple(shape))


def _identity_decorator_factory(*a, **k):
    def deco(fn):
        return fn
    return deco


class FakeGroup:
    def __init__(self, rank, size):
        self._rank, self._size = rank, size

    def rank(self):
        return self._rank

    def size(self):
        return self._size


class ProcessGroupCollection:
    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)


class MultiModuleProcessGroupCollection:
    pass


class MultiModulePipelineCommunicator:
    pass


# utils.py transcription, used only if the real utils.py fails to load
def _is_pp_first_stage(pp_group):
    return pp_group.rank() == 0


def _is_pp_last_stage(pp_group):
    return pp_group.rank() == pp_group.size() - 1


def _is_vp_first_stage(vp_stage, vp_size):
    if vp_size is None or vp_size <= 1:
        assert vp_stage is None or vp_stage == 0
        return True
    return vp_stage == 0


def _is_vp_last_stage(vp_stage, vp_size):
    if vp_size is None or vp_size <= 1:
        assert vp_stage is None or vp_stage == 0
        return True
    return vp_stage == (vp_size - 1)


def _get_pg_rank(group=None):
    return 0 if group is None else group.rank()


def _get_pg_size(group=None):
    return 1 if group is None else group.size()


def _noop(*a, **k):
    return None


OVERRIDES = {
    "torch": dict(
        Tensor=FakeTensor, Size=FakeSize, empty=_fake_empty,
        zeros=lambda *a, **k: 0, tensor=lambda *a, **k: 0, ones=lambda *a, **k: 1,
    ),
    "torch.nn": dict(Module=FakeModule),
    "torch.autograd": dict(Function=FakeAutogradFunction),
    "torch.cuda": dict(current_device=lambda: 0, synchronize=_noop),
    "torch.distributed": dict(
        ProcessGroup=FakeProcessGroup, P2POp=FakeP2POp, isend=_fake_isend, irecv=_fake_irecv,
        batch_isend_irecv=lambda ops: [FakeReq(op.op) for op in ops],
        get_global_rank=lambda group, r: r, is_initialized=lambda: True,
        get_backend=lambda group=None: "nccl",
    ),
    "nemo.lens.helpers": dict(trace_fn=_identity_decorator_factory),
    "nemo.lens.fallbacks": dict(trace_fn=_identity_decorator_factory),
    "megatron.core.telemetry.fallbacks": dict(trace_fn=_identity_decorator_factory),
    "megatron.core.utils": dict(
        nvtx_decorator=_identity_decorator_factory, nvtx_range_push=_noop, nvtx_range_pop=_noop,
        get_pg_rank=_get_pg_rank, get_pg_size=_get_pg_size,
        get_model_config=lambda model: model.config,
        get_model_type=lambda model: "encoder_or_decoder",
        get_attr_wrapped_model=lambda model, attr, **k: getattr(model, attr, _noop),
        drain_embedding_wgrad_compute=_noop, log_single_rank=_noop,
    ),
    "megatron.core.process_groups_config": dict(
        ProcessGroupCollection=ProcessGroupCollection,
        MultiModuleProcessGroupCollection=MultiModuleProcessGroupCollection,
    ),
    f"{PP}.multimodule_communicator": dict(
        MultiModulePipelineCommunicator=MultiModulePipelineCommunicator),
    f"{PP}.utils": dict(
        is_pp_first_stage=_is_pp_first_stage, is_pp_last_stage=_is_pp_last_stage,
        is_vp_first_stage=_is_vp_first_stage, is_vp_last_stage=_is_vp_last_stage,
    ),
}


class StubModule(types.ModuleType):
    """A package-like module whose missing attributes are MagicMocks."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        full = f"{self.__name__}.{name}"
        # torch.nn / torch.distributed etc.: make attribute access import the stub submodule
        if self.__name__.split(".")[0] == "torch" and name in ("nn", "cuda", "distributed",
                                                                "autograd"):
            return importlib.import_module(full)
        val = MagicMock(name=full)
        setattr(self, name, val)
        return val


class StubLoader(importlib.abc.Loader):
    def create_module(self, spec):
        mod = StubModule(spec.name)
        mod.__path__ = []
        return mod

    def exec_module(self, module):
        for k, v in OVERRIDES.get(module.__name__, {}).items():
            setattr(module, k, v)


class RealLoader(importlib.abc.Loader):
    def __init__(self, source, path):
        self.source, self.path = source, path

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        text = self.source.read(self.path)
        fname = os.path.join(self.source.tree, self.path) if self.source.tree else \
            f"{self.source.describe()}:{self.path}"
        linecache.cache[fname] = (len(text), None, text.splitlines(True), fname)
        module.__file__ = fname
        exec(compile(text, fname, "exec"), module.__dict__)


class Finder(importlib.abc.MetaPathFinder):
    def __init__(self, source, real_utils=True):
        self.source = source
        self.real = dict(REAL_MODULES)
        if not real_utils:
            self.real.pop(f"{PP}.utils")

    def find_spec(self, name, path=None, target=None):
        if name in self.real:
            return importlib.util.spec_from_loader(name, RealLoader(self.source, self.real[name]))
        if name.split(".")[0] in STUB_ROOTS:
            return importlib.machinery.ModuleSpec(name, StubLoader(), is_package=True)
        return None


def load_megatron(source):
    """Install the finder and import the real modules.  Returns (sched, p2p, utils_is_real)."""
    finder = Finder(source, real_utils=True)
    sys.meta_path.insert(0, finder)
    for sub in ("torch", "torch.nn", "torch.cuda", "torch.distributed", "torch.autograd"):
        importlib.import_module(sub)
    utils_real = True
    try:
        importlib.import_module(f"{PP}.utils")
    except Exception as e:  # fall back to the transcription
        print(f"note: real utils.py did not load ({e!r}); using transcribed stage helpers",
              file=sys.stderr)
        sys.modules.pop(f"{PP}.utils", None)
        finder.real.pop(f"{PP}.utils")
        importlib.import_module(f"{PP}.utils")
        utils_real = False
    p2p = importlib.import_module(f"{PP}.p2p_communication")
    sched = importlib.import_module(f"{PP}.schedules")
    SITES["sched_file"] = sched.__file__
    install_fakes(sched, p2p)
    return sched, p2p, utils_real


# ----------------------------------------------------------------------------
# Events
# ----------------------------------------------------------------------------
class ComputeEvent:
    def __init__(self, task, site):
        self.task, self.site = task, site


class CommEvent:
    def __init__(self, sn, sp, rp, rn, wait, site):
        self.sn, self.sp, self.rp, self.rn, self.wait, self.site = sn, sp, rp, rn, wait, site

    def parts(self):
        return [(k, getattr(self, k)) for k in ("sn", "sp", "rp", "rn") if getattr(self, k) is not None]


class WaitEvent:
    def __init__(self, req, again, site):
        self.req, self.again, self.site = req, again, site


PART_OF_KEY = {"send_next": "sn", "recv_prev": "rp", "send_prev": "sp", "recv_next": "rn"}


def part_task(part, t):
    """Name the task a communicated tensor belongs to."""
    if not isinstance(t, FakeTensor):
        return f"?{type(t).__name__}"
    if part == "sn":
        return t.task if t.kind == "act" else f"?{t.kind}{t.id}"
    if part == "sp":
        return t.task if t.kind == "grad" else f"?{t.kind}{t.id}"
    if part == "rp":
        return t.fwd_consumers[0] if t.fwd_consumers else "?"
    if part == "rn":
        return t.bwd_consumers[0] if t.bwd_consumers else "?"
    raise ValueError(part)


def render(ev, sites=False):
    at = f"@L{ev.site}" if sites and ev.site is not None else ""
    if isinstance(ev, ComputeEvent):
        return ev.task + at
    if isinstance(ev, CommEvent):
        body = ",".join(f"{k}={part_task(k, t)}" for k, t in ev.parts())
        return f"C({body};{'wait' if ev.wait else 'async'}){at}"
    if isinstance(ev, WaitEvent):
        r = ev.req
        if r.event is None:
            return f"W(?unknown-request){at}"
        t = getattr(r.event, r.part)
        return f"W({r.part}={part_task(r.part, t)}{';again' if ev.again else ''}){at}"
    raise TypeError(ev)


# ----------------------------------------------------------------------------
# Fakes installed into the real modules
# ----------------------------------------------------------------------------
def install_fakes(sched, p2p):
    P2P = p2p.P2PCommunicator
    real_communicate = P2P._communicate

    def logged_communicate(self, *, tensor_send_next, tensor_send_prev, recv_prev, recv_next,
                           tensor_shape, wait_on_reqs=True):
        site = _site()
        ST.in_comm += 1
        try:
            rp, rn, reqs = real_communicate(
                self, tensor_send_next=tensor_send_next, tensor_send_prev=tensor_send_prev,
                recv_prev=recv_prev, recv_next=recv_next, tensor_shape=tensor_shape,
                wait_on_reqs=wait_on_reqs)
        finally:
            ST.in_comm -= 1
        ev = CommEvent(tensor_send_next, tensor_send_prev, rp, rn, wait_on_reqs, site)
        for t, part in ((rp, "rp"), (rn, "rn")):
            if t is not None:
                t.recv_event, t.recv_part = ev, part
        for t, part in ((tensor_send_next, "sn"), (tensor_send_prev, "sp")):
            if t is not None and not isinstance(t, FakeTensor):
                ST.odd(f"{part} is not a fake tensor: {t!r}")
        if isinstance(reqs, dict):
            for key, req in reqs.items():
                req.event, req.part = ev, PART_OF_KEY[key]
                ST.reqs.append((ST.rank, req))
        elif reqs:  # a non-empty list would be un-waited batched requests
            ST.odd(f"_communicate returned un-waited request list {reqs!r}")
        if ev.parts():
            ST.log(ev)
        else:
            ST.empty_calls += 1
            if ST.keep_empty:
                ST.log(ev)
        return rp, rn, reqs

    def no_shapes(self, *a, **k):
        raise RuntimeError("_communicate_shapes reached (variable_seq_lengths/mtp_standalone?)")

    P2P._communicate = logged_communicate
    P2P._communicate_shapes = no_shapes

    def fake_forward_step(forward_step_func, data_iterator, model, num_microbatches, input_tensor,
                          forward_data_store, config, cp_group_size=None,
                          collect_non_loss_data=False, checkpoint_activations_microbatch=None,
                          is_first_microbatch=False, current_microbatch=None, vp_stage=None,
                          is_last_stage=True):
        c = model.chunk_id
        m = ST.fwd_count[c]
        ST.fwd_count[c] += 1
        task = f"F{m}.{c}"
        if current_microbatch is not None and current_microbatch != m:
            ST.odd(f"{task}: Megatron passed current_microbatch={current_microbatch}")
        if vp_stage is not None and vp_stage != c:
            ST.odd(f"{task}: Megatron passed vp_stage={vp_stage}")
        want_last = ST.rank == ST.P - 1 and c == ST.V - 1
        if bool(is_last_stage) != want_last:
            ST.odd(f"{task}: is_last_stage={is_last_stage}")
        unwrap = not isinstance(input_tensor, list)
        inputs = [input_tensor] if unwrap else list(input_tensor)
        for t in inputs:
            if isinstance(t, FakeTensor):
                if t.kind != "recv":
                    ST.odd(f"{task} consumed a non-received tensor {t!r}")
                if t.fwd_consumers:
                    ST.odd(f"{task} consumed {t!r} already consumed by {t.fwd_consumers}")
                t.fwd_consumers.append(task)
            elif t is not None:
                ST.odd(f"{task} got input {t!r}")
        want_none = ST.rank == 0 and c == 0
        if want_none != all(t is None for t in inputs):
            ST.odd(f"{task}: input {inputs!r}")
        ST.fwd_inputs[task] = inputs
        ST.log(ComputeEvent(task, _site()))
        out = FakeTensor("act", task)
        return (out if unwrap else [out]), 0

    def fake_backward_step(input_tensor, output_tensor, output_tensor_grad, config):
        outs = output_tensor if isinstance(output_tensor, list) else [output_tensor]
        src = outs[0]
        if not (isinstance(src, FakeTensor) and src.kind == "act"):
            ST.odd(f"backward got output_tensor {output_tensor!r}")
            m, c = -1, -1
        else:
            m, c = (int(x) for x in src.task[1:].split("."))
        if ST.bwd_count[c] != m:
            ST.odd(f"backward of chunk {c} ran microbatch {m} as its #{ST.bwd_count[c]}")
        ST.bwd_count[c] += 1
        task = f"B{m}.{c}"
        grads = output_tensor_grad if isinstance(output_tensor_grad, list) else [output_tensor_grad]
        for g in grads:
            if isinstance(g, FakeTensor):
                if g.kind != "recv":
                    ST.odd(f"{task} consumed non-received grad {g!r}")
                if g.bwd_consumers:
                    ST.odd(f"{task} consumed {g!r} already consumed by {g.bwd_consumers}")
                g.bwd_consumers.append(task)
            elif g is not None:
                ST.odd(f"{task} got grad {g!r}")
        want_none = ST.rank == ST.P - 1 and c == ST.V - 1
        if want_none != all(g is None for g in grads):
            ST.odd(f"{task}: output_tensor_grad {output_tensor_grad!r}")
        unwrap = not isinstance(input_tensor, list)
        inputs = [input_tensor] if unwrap else list(input_tensor)
        fin = ST.fwd_inputs.get(f"F{m}.{c}")
        if fin is None or len(fin) != len(inputs) or any(a is not b for a, b in zip(fin, inputs)):
            ST.odd(f"{task}: input_tensor {inputs!r} is not what F{m}.{c} consumed ({fin!r})")
        ST.log(ComputeEvent(task, _site()))
        res = [None if x is None else FakeTensor("grad", task) for x in inputs]
        return res[0] if unwrap else res

    sched.forward_step = fake_forward_step
    sched.backward_step = fake_backward_step
    sched.deallocate_output_tensor = lambda out, deallocate_pipeline_outputs=False: None
    sched.set_current_microbatch = _noop
    sched.clear_embedding_activation_buffer = lambda config, model, is_last_stage: None
    sched.finish_embedding_wgrad_compute = _noop
    sched.get_model_config = lambda model: model.config
    sched.get_model_type = lambda model: "encoder_or_decoder"
    sched.get_attr_wrapped_model = lambda model, attr, **k: getattr(model, attr, _noop)
    sched.create_cudagraphs = _noop
    sched.paged_stash_reset = _noop
    sched.nvtx_range_push = _noop
    sched.nvtx_range_pop = _noop


# ----------------------------------------------------------------------------
# Driving the schedules
# ----------------------------------------------------------------------------
class FakeChunk(FakeModule):
    def __init__(self, chunk_id, config):
        super().__init__()
        self.chunk_id, self.config = chunk_id, config

    def set_input_tensor(self, t):
        pass


def make_config(shape):
    return types.SimpleNamespace(
        pipeline_dtype="bf16", variable_seq_lengths=False, mtp_standalone=False,
        batch_p2p_comm=shape["batch_p2p_comm"], batch_p2p_sync=False,
        use_ring_exchange_p2p=False,
        overlap_p2p_comm=shape["overlap_p2p_comm"],
        overlap_p2p_comm_warmup_flush=shape["overlap_p2p_comm_warmup_flush"],
        microbatch_group_size_per_vp_stage=shape["G"] if shape["G"] is not None else shape["P"],
        virtual_pipeline_model_parallel_size=shape["V"] if shape["schedule"] == "interleaved" else None,
        num_microbatches_with_partial_activation_checkpoints=None,
        deallocate_pipeline_outputs=shape["deallocate_pipeline_outputs"],
        timers=None, barrier_with_L1_time=False,
        grad_sync_func=None, param_sync_func=None, no_sync_func=None,
        finalize_model_grads_func=None, grad_scale_func=None, calculate_per_token_loss=False,
        hidden_size=16, sequence_parallel=False, fine_grained_activation_offloading=False,
        overlap_moe_expert_parallel_comm=False, moe_paged_stash=False,
        enable_autocast=False, defer_embedding_wgrad_compute=False,
    )


def make_shape(schedule, P, V, M, G, batch, overlap, flush, dealloc=False):
    if schedule == "1f1b":
        V, G = 1, None
    elif G is None:
        G = P  # ModelParallelConfig's default microbatch_group_size_per_vp_stage
    return {"schedule": schedule, "P": P, "V": V, "M": M, "G": G,
            "batch_p2p_comm": batch, "overlap_p2p_comm": overlap,
            "overlap_p2p_comm_warmup_flush": flush, "deallocate_pipeline_outputs": dealloc}


def run_shape(sched, p2p, shape, sites=False, keep_empty=False):
    ST.reset_shape(shape)
    ST.keep_empty = keep_empty
    P, V, M = shape["P"], shape["V"], shape["M"]
    fn = (sched.forward_backward_pipelining_with_interleaving if shape["schedule"] == "interleaved"
          else sched.forward_backward_pipelining_without_interleaving)
    for r in range(P):
        ST.reset_rank(r, P, V)
        config = make_config(shape)
        comm = p2p.P2PCommunicator(pp_group=FakeGroup(r, P), config=config)
        model = [FakeChunk(c, config) for c in range(V)]
        pgc = ProcessGroupCollection(tp=FakeGroup(0, 1), cp=FakeGroup(0, 1))
        try:
            fn(forward_step_func=_noop, data_iterator=[iter(()) for _ in range(V)], model=model,
               num_microbatches=M, seq_length=8, micro_batch_size=1, forward_only=False,
               p2p_communicator=comm, pg_collection=pgc)
        except Exception as e:
            return {"shape": shape, "error": f"{type(e).__name__}: {e}", "rank": r}
    ranks = {str(r): [render(ev, sites) for ev in ST.events[r]] for r in range(P)}
    return {"shape": shape, "ranks": ranks}


# ----------------------------------------------------------------------------
# Checks
# ----------------------------------------------------------------------------
TASK_RE = re.compile(r"^([FB])(\d+)\.(\d+)$")


def check_shape(res):
    """Return a list of problems for one successful shape (uses ST of the last run)."""
    shape, out = res["shape"], []
    P, V, M = shape["P"], shape["V"], shape["M"]
    out += [f"anomaly: {a}" for a in ST.anomalies]
    want = sorted([f"F{m}.{c}" for m in range(M) for c in range(V)] +
                  [f"B{m}.{c}" for m in range(M) for c in range(V)])
    sends_next, sends_prev, recvs_prev, recvs_next = {}, {}, {}, {}
    for r in range(P):
        evs = ST.events[r]
        comp = [e.task for e in evs if isinstance(e, ComputeEvent)]
        if sorted(comp) != want:
            out.append(f"rank {r}: compute tasks are not each F/B exactly once: {comp}")
        sn, sp, rp, rn = [], [], [], []
        for e in evs:
            if not isinstance(e, CommEvent):
                continue
            if e.sn is not None:
                sn.append(part_task("sn", e.sn))
            if e.sp is not None:
                sp.append(part_task("sp", e.sp))
            if e.rp is not None:
                t = part_task("rp", e.rp)
                mt = TASK_RE.match(t)
                if not mt:
                    rp.append(t)
                else:   # producer on the previous rank
                    m, c = int(mt[2]), int(mt[3])
                    rp.append(f"F{m}.{c - 1}" if r == 0 else f"F{m}.{c}")
            if e.rn is not None:
                t = part_task("rn", e.rn)
                mt = TASK_RE.match(t)
                if not mt:
                    rn.append(t)
                else:   # producer on the next rank
                    m, c = int(mt[2]), int(mt[3])
                    rn.append(f"B{m}.{c + 1}" if r == P - 1 else f"B{m}.{c}")
        sends_next[r], sends_prev[r], recvs_prev[r], recvs_next[r] = sn, sp, rp, rn
    for r in range(P):
        nxt, prv = (r + 1) % P, (r - 1) % P
        if sends_next[r] != recvs_prev[nxt]:
            out.append(f"sn rank {r} -> rp rank {nxt} differ: sent {sends_next[r]} "
                       f"/ received-as {recvs_prev[nxt]}")
        if sends_prev[r] != recvs_next[prv]:
            out.append(f"sp rank {r} -> rn rank {prv} differ: sent {sends_prev[r]} "
                       f"/ received-as {recvs_next[prv]}")
        for lst, what in ((sends_next[r], "sn"), (sends_prev[r], "sp")):
            for t in lst:
                mt = TASK_RE.match(t)
                if not mt:
                    out.append(f"rank {r}: {what}={t}")
                    continue
                c = int(mt[3])
                if what == "sn" and (r == P - 1 and c == V - 1):
                    out.append(f"rank {r}: last stage sends {t}")
                if what == "sp" and (r == 0 and c == 0):
                    out.append(f"rank {r}: first stage sends grad {t}")
    never = [(r, q) for r, q in ST.reqs if q.waits == 0]
    if never:  # Megatron behaviour, not a harness fault (handle dropped when the loop ends)
        out.append("async requests never waited by the schedule: " + ", ".join(
            f"rank {r} {q.part}={part_task(q.part, getattr(q.event, q.part))}" for r, q in never))
    again = sum(1 for evs in ST.events.values() for e in evs if isinstance(e, WaitEvent) and e.again)
    if again:
        out.append(f"{again} request(s) waited more than once")
    return out


def parse_orders(path):
    """MegatronOrders.h -> (orders {key: [rank strings]}, rejections {key: phrase})."""
    text = open(path).read()
    orders, rejects = {}, {}
    for mt in re.finditer(r'\{"([^"]+)",\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+),\s*\{(.*?)\}\}',
                          text, re.S):
        name, P, V, M, G = mt[1], int(mt[2]), int(mt[3]), int(mt[4]), int(mt[5])
        ranks = re.findall(r'"([^"]*)"', mt[6])
        orders[(P, V, M, G or P)] = (name, ranks)
    for mt in re.finditer(r'\{"(REJECT_[^"]+)",\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+),\s*"([^"]*)"\}',
                          text):
        P, V, M, G = int(mt[2]), int(mt[3]), int(mt[4]), int(mt[5])
        rejects[(P, V, M, G or P)] = (mt[1], mt[6])
    return orders, rejects


def order_key(shape):
    return (shape["P"], shape["V"], shape["M"], shape["G"] if shape["G"] is not None else shape["P"])


def compare_order(res, orders):
    """Compare the compute order with MegatronOrders.h; None if the shape isn't listed."""
    shape = res["shape"]
    key = order_key(shape)
    if key not in orders:
        return None
    name, ranks = orders[key]
    probs = []
    for r, want in enumerate(ranks):
        got = " ".join(e.task for e in ST.events.get(r, []) if isinstance(e, ComputeEvent))
        if got != want:
            probs.append(f"{name} rank {r}: got {got!r} want {want!r}")
    return probs


# ----------------------------------------------------------------------------
# Matrix
# ----------------------------------------------------------------------------
def matrix(dealloc=False):
    for P in (2, 3, 4):
        for M in (1, 2, 3, 5, 8):
            for batch in (True, False):
                yield make_shape("1f1b", P, 1, M, None, batch, False, False, dealloc)
    combos = [(True, False, False), (False, False, False), (False, True, False),
              (False, True, True)]  # (batch, overlap, flush)
    for P in (2, 3, 4):
        for V in (2, 3):
            for M in (P, P + 1, 2 * P, 2 * P + 1, 3 * P):
                Gs = [P] + [g for g in range(P + 1, M + 1) if M % g == 0 or M % g >= P]
                for G in Gs:
                    for batch, overlap, flush in combos:
                        yield make_shape("interleaved", P, V, M, G, batch, overlap, flush,
                                         dealloc)


def comm_variants(schedule):
    if schedule == "1f1b":
        return [(True, False, False), (False, False, False)]
    return [(True, False, False), (False, False, False), (False, True, False), (False, True, True)]


def summarize(results_problems, file=sys.stderr):
    n_ok = sum(1 for r, p in results_problems if "ranks" in r)
    n_err = len(results_problems) - n_ok
    print(f"# shapes run: {len(results_problems)}  ok: {n_ok}  rejected by Megatron: {n_err}",
          file=file)
    errs = defaultdict(int)
    for r, _ in results_problems:
        if "error" in r:
            errs[re.sub(r"\d+", "#", r["error"])[:110]] += 1
    for e, n in sorted(errs.items()):
        print(f"#   {n:3d} x {e}", file=file)
    kinds = defaultdict(list)
    for r, probs in results_problems:
        for p in probs:
            k = re.sub(r"rank \d+ \S+=\S+(, )?", "", p.split(":")[0])
            kinds[k].append((r["shape"], p))
    if not kinds:
        print("# checks: nothing odd", file=file)
    for k, lst in kinds.items():
        print(f"# {len(lst)} shape(s): {k}", file=file)
        for shape, p in lst[:3]:
            s = shape
            tag = (f"{s['schedule']} P{s['P']} V{s['V']} M{s['M']} G{s['G']} b{int(s['batch_p2p_comm'])}"
                   f" o{int(s['overlap_p2p_comm'])} f{int(s['overlap_p2p_comm_warmup_flush'])}")
            print(f"#     e.g. {tag}: {p[:300]}", file=file)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--megatron-dir", default=os.environ.get("MEGATRON_DIR"),
                    help="Megatron-LM checkout (else the git dir is used)")
    ap.add_argument("--megatron-git", default=os.environ.get("MEGATRON_GIT_DIR", DEFAULT_GIT_DIR))
    ap.add_argument("--megatron-rev", default=os.environ.get("MEGATRON_REV", "HEAD"))
    ap.add_argument("--schedule", choices=["1f1b", "interleaved"], default="1f1b")
    ap.add_argument("--P", type=int, default=2)
    ap.add_argument("--V", type=int, default=2)
    ap.add_argument("--M", type=int, default=4)
    ap.add_argument("--G", type=int, default=None, help="microbatch_group_size_per_vp_stage (default P)")
    ap.add_argument("--batch", dest="batch", action="store_true", default=None)
    ap.add_argument("--no-batch", dest="batch", action="store_false")
    ap.add_argument("--overlap", dest="overlap", action="store_true", default=False)
    ap.add_argument("--no-overlap", dest="overlap", action="store_false")
    ap.add_argument("--warmup-flush", action="store_true")
    ap.add_argument("--deallocate", action="store_true",
                    help="deallocate_pipeline_outputs (with --all: the whole matrix)")
    ap.add_argument("--all", action="store_true", help="print JSON lines for the whole matrix")
    ap.add_argument("--check-orders", action="store_true",
                    help="run MegatronOrders.h's shapes under every comm variant and compare")
    ap.add_argument("--orders", default=DEFAULT_ORDERS, help="path of MegatronOrders.h")
    ap.add_argument("--sites", action="store_true", help="append @L<schedules.py line> to events")
    ap.add_argument("--keep-empty", action="store_true", help="keep _communicate calls with no parts")
    ap.add_argument("--text", action="store_true", help="one line per rank instead of JSON")
    ap.add_argument("--no-check", action="store_true")
    a = ap.parse_args()

    src = Source(tree=a.megatron_dir) if a.megatron_dir else Source(git_dir=a.megatron_git,
                                                                     rev=a.megatron_rev)
    sched, p2p, utils_real = load_megatron(src)
    sys.stdout.flush()
    print(f"# megatron: {src.describe()} (utils.py {'real' if utils_real else 'transcribed'})",
          file=sys.stderr)
    orders, rejects = parse_orders(a.orders) if os.path.exists(a.orders) else ({}, {})

    def emit(res):
        if a.text and "ranks" in res:
            print(json.dumps(res["shape"]))
            for r, evs in res["ranks"].items():
                print(f"  rank {r}: {' '.join(evs)}")
        else:
            print(json.dumps(res), flush=True)

    def run_and_check(shape):
        res = run_shape(sched, p2p, shape, a.sites, a.keep_empty)
        probs = []
        if "ranks" in res:
            probs = check_shape(res)
            cmp = compare_order(res, orders)
            if cmp:
                probs += [f"order differs from MegatronOrders.h: {p}" for p in cmp]
            if order_key(shape) in rejects:
                probs.append(f"MegatronOrders.h lists {rejects[order_key(shape)][0]} as rejected")
        elif shape["schedule"] == "interleaved" and order_key(shape) in orders:
            probs.append(f"rejected but MegatronOrders.h lists {orders[order_key(shape)][0]}")
        return res, probs

    if a.all or a.check_orders:
        if a.all:
            shapes = list(matrix(a.deallocate))
        else:
            shapes = []
            for (P, V, M, G) in list(orders) + list(rejects):
                if P < 2:
                    continue  # forward_backward_no_pipelining: not driven here
                sch = "1f1b" if V == 1 else "interleaved"
                for batch, overlap, flush in comm_variants(sch):
                    shapes.append(make_shape(sch, P, V, M, G if V > 1 else None, batch, overlap,
                                             flush))
        results, empties, compared = [], 0, set()
        for shape in shapes:
            res, probs = run_and_check(shape)
            if "ranks" in res:
                empties += ST.empty_calls
                if order_key(shape) in orders:
                    compared.add(orders[order_key(shape)][0])
            elif order_key(shape) in rejects:
                compared.add(rejects[order_key(shape)][0])
            results.append((res, probs))
            if a.all:
                emit(res)
        sys.stdout.flush()
        if not a.no_check:
            summarize(results)
            print(f"# MegatronOrders.h entries compared: {len(compared)} {sorted(compared)}",
                  file=sys.stderr)
            print(f"# empty _communicate calls dropped: {empties}", file=sys.stderr)
        return

    batch = a.batch if a.batch is not None else not a.overlap
    shape = make_shape(a.schedule, a.P, a.V, a.M, a.G, batch, a.overlap, a.warmup_flush,
                       a.deallocate)
    res, probs = run_and_check(shape)
    emit(res)
    sys.stdout.flush()
    if not a.no_check and "ranks" in res:
        for p in probs:
            print(f"# odd: {p}", file=sys.stderr)
        print(f"# checks: {len(probs)} problem(s); empty _communicate calls dropped: "
              f"{ST.empty_calls}", file=sys.stderr)


if __name__ == "__main__":
    main()
