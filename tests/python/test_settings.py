#!/usr/bin/env python3
"""The optimizer's settings, one list and its faces (run once per rank by
tests/system/python/run_settings.sh): the module's rows
(python/src/optim_settings.h) against the fields and docs of
zsh_optim_config_t in include/zeroshard/optim.h, the manual's tables, the
keywords of zeroshard.Optimizer and zeroshard.torch.ZeRO, and the policies;
a setting given by its policy and by its keyword gives the same config, and
one given both ways is refused.
"""

import os
import re
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import case, main, raises  # noqa: E402

TOP = os.environ.get("abs_top_srcdir") or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                       "..", "..")


def source(path):
    with open(os.path.join(TOP, path)) as f:
        return f.read()


def header_fields():
    """[(field, its doc comment)] of zsh_optim_config_t, in order; a field
    without a /**< */ comment has doc None."""
    text = source("include/zeroshard/optim.h")
    m = re.search(r"typedef struct zsh_optim_config \{(.*?)\} zsh_optim_config_t;", text, re.S)
    if m is None:
        raise AssertionError("include/zeroshard/optim.h has no typedef struct zsh_optim_config")
    body = re.sub(r"/\*(?!\*<).*?\*/", " ", m.group(1), flags=re.S)  # plain comments
    fields = []
    for f in re.finditer(r"(\w+)\s*[;,]\s*(/\*\*<(.*?)\*/)?", body, re.S):
        fields.append((f.group(1), " ".join(f.group(3).split()) if f.group(2) else None))
    return fields


def config_page_variables():
    """The ZSH_* variables of docs/configuration.md's generated table (zsh_info -c)."""
    return set(re.findall(r"^\| \w+ \| `(ZSH_[A-Z0-9_]+)` \|", source("docs/configuration.md"),
                          re.M))


def new_optimizer(ctx, **kw):
    return ctx.zsh.Optimizer(ctx.comm, **kw)


@case
def test_header_declares_the_listed_fields_in_order_each_with_a_doc(ctx):
    from zeroshard.settings import SETTINGS
    fields = header_fields()
    names = [f for f, _ in fields]
    want = ["size"] + [s.name for s in SETTINGS]
    if names != want:
        raise AssertionError("zsh_optim_config_t has %s; python/src/optim_settings.h lists %s"
                             % (names, want))
    undocumented = [f for f, doc in fields if not doc]
    if undocumented:
        raise AssertionError("fields without a /**< */ comment: %s" % undocumented)


@case
def test_header_doc_names_the_variable_each_setting_falls_back_to(ctx):
    from zeroshard.settings import SETTINGS
    docs = dict(header_fields())
    known = config_page_variables()
    if len(known) < 10:
        raise AssertionError("docs/configuration.md's ZSH_* table has %d variables" % len(known))
    for s in SETTINGS:
        named = set(re.findall(r"ZSH_[A-Z0-9_]+", docs[s.name])) & known
        want = {s.variable} if s.variable else set()
        if named != want:
            raise AssertionError("%s: its doc in optim.h names the variables %s, its row %s"
                                 % (s.name, sorted(named), sorted(want)))
        if s.variable and s.variable not in known:
            raise AssertionError("%s: %s is not in docs/configuration.md's ZSH_* table"
                                 % (s.name, s.variable))


@case
def test_manual_table_is_the_listed_settings(ctx):
    from zeroshard.settings import DOC_MARKER, doc_table
    text = source("docs/zero.md")
    at = text.find(DOC_MARKER + "\n")
    if at < 0:
        raise AssertionError("docs/zero.md has no line %s" % DOC_MARKER)
    block = text[at:].split("\n\n", 1)[0].rstrip("\n")
    want = doc_table()
    if block != want:
        got, exp = block.split("\n"), want.split("\n")
        diff = [(g, e) for g, e in zip(got, exp) if g != e][:1] or \
            [("%d lines" % len(got), "%d lines" % len(exp))]
        raise AssertionError("docs/zero.md's settings table differs from zeroshard.settings."
                             "doc_table() (paste it there): page %r, list %r" % diff[0])


@case
def test_policies_hold_the_settings_their_rows_name(ctx):
    import dataclasses
    from zeroshard import settings
    for arg, cls in settings.POLICIES.items():
        fields = [f.name for f in dataclasses.fields(cls)]
        want = [s.name for s in settings.SETTINGS if s.policy == cls.__name__]
        if fields != want:
            raise AssertionError("%s has fields %s; its rows are %s" % (cls.__name__, fields, want))
        if getattr(ctx.zsh, cls.__name__) is not cls:
            raise AssertionError("zeroshard.%s is not exported" % cls.__name__)
    names = {cls.__name__ for cls in settings.POLICIES.values()}
    stray = [s.name for s in settings.SETTINGS if s.policy and s.policy not in names]
    if stray:
        raise AssertionError("rows name a policy no class has: %s" % stray)


# A value other than the default for every setting, and the code the struct must hold.
NON_DEFAULT = {
    "stage": (2, 2), "kind": ("sgd", 0), "precision": ("bf16", 7), "lr": (0.25, 0.25),
    "beta1": (0.5, 0.5), "beta2": (0.75, 0.75), "eps": (0.125, 0.125),
    "weight_decay": (0.5, 0.5), "momentum": (0.25, 0.25), "nesterov": (True, 1),
    "max_grad_norm": (2.0, 2.0), "loss_scale": (512.0, 512.0),
    "dynamic_loss_scale": (False, 0), "loss_scale_window": (7, 7), "min_loss_scale": (4.0, 4.0),
    "bucket_size": (4096, 4096), "max_live_bytes": (1 << 20, 1 << 20), "prefetch": (3, 3),
    "offload_optimizer": ("cpu", 1), "offload_params": ("nvme", 2),
    "nvme_dir": ("/var/tmp/x", "/var/tmp/x"), "host_mem_limit": (1 << 21, 1 << 21),
    "sub_group_size": (8192, 8192), "update_threads": (3, 3), "hpz": ("auto", -1),
    "stream": (0x1000, 0x1000), "deterministic": (True, 1), "quantize_weights": ("auto", -1),
    "quantize_block": (512, 512), "quantize_grads": ("on", 2), "quantize_grad_bits": (4, 4),
    "quantize_weight_bits": (8, 8),
}


@case
def test_every_setting_reaches_its_field_as_a_keyword(ctx):
    from zeroshard import _zeroshard as z
    from zeroshard.settings import SETTINGS, merge, to_config
    if set(NON_DEFAULT) != {s.name for s in SETTINGS}:
        raise AssertionError("NON_DEFAULT covers %s, the list %s"
                             % (sorted(NON_DEFAULT), sorted(s.name for s in SETTINGS)))
    defaults = z.optim_config_defaults()
    for s in SETTINGS:
        value, code = NON_DEFAULT[s.name]
        got = z.optim_config_resolve(to_config(merge({s.name: value})))
        if got[s.name] != code or defaults[s.name] == code:
            raise AssertionError("%s=%r: the struct holds %r (want %r, default %r)"
                                 % (s.name, value, got[s.name], code, defaults[s.name]))
        others = {k: v for k, v in got.items() if k != s.name}
        if others != {k: v for k, v in defaults.items() if k != s.name}:
            raise AssertionError("%s=%r changed other fields: %s" % (s.name, value, others))
    # Every default, given back as a keyword, is the default.
    opt = new_optimizer(ctx, **{s.name: s.default for s in SETTINGS})
    try:
        if opt.config != defaults:
            raise AssertionError("the defaults as keywords give %s, not %s" % (opt.config, defaults))
    finally:
        opt.close()


def policy_and_flat(zsh, nvme_dir):
    policies = dict(
        mp_policy=zsh.MixedPrecisionPolicy(loss_scale=512.0, dynamic_loss_scale=False,
                                           loss_scale_window=7, min_loss_scale=4.0),
        offload_policy=zsh.OffloadPolicy(offload_optimizer="cpu", nvme_dir=nvme_dir,
                                         host_mem_limit=1 << 21, sub_group_size=8192),
        sharding_policy=zsh.ShardingPolicy(bucket_size=256, max_live_bytes=1 << 20, prefetch=1,
                                           hpz="off"))
    flat = {}
    for p in policies.values():
        flat.update(p.settings())
    return policies, flat


@case
def test_policies_and_keywords_give_the_same_config_and_steps(ctx):
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        policies, flat = policy_and_flat(ctx.zsh, d)
        if len(flat) != 12:
            raise AssertionError("the policies set %d settings, not 12: %s" % (len(flat), flat))
        results = []
        for kw in (dict(policies), dict(flat)):
            opt = new_optimizer(ctx, stage=2, lr=0.5, **kw)
            try:
                ws = [opt.register("w%d" % j, np.full(37 + j, 1.0 + j, np.float32))
                      for j in range(3)]
                for step in range(2):
                    for j, w in enumerate(ws):
                        opt.grad_ready(w, np.full(w.numel, 0.25 * (j + step + 1), np.float32))
                    opt.step()
                values = [opt.gather(w, np.empty(w.numel, np.float32)) for w in ws]
                results.append((opt.config, values, opt.stats()))
            finally:
                opt.close()
    (cfg_p, val_p, st_p), (cfg_f, val_f, st_f) = results
    if cfg_p != cfg_f:
        raise AssertionError("policies give %s, keywords %s" % (cfg_p, cfg_f))
    defaults = ctx.zsh._zeroshard.optim_config_defaults()
    same = [k for k in flat if cfg_p[k] == defaults[k]]
    if same:
        raise AssertionError("the policies left %s at their defaults" % same)
    for a, b in zip(val_p, val_f):
        if not np.array_equal(a, b):
            raise AssertionError("parameters differ: %s against %s" % (a[:4], b[:4]))
    if not (st_p["host_bytes"] > 0 and st_p["host_bytes"] == st_f["host_bytes"]
            and st_p["nbuckets"] == st_f["nbuckets"] > 1):
        raise AssertionError("policies: host %d B, %d buckets; keywords: host %d B, %d buckets"
                             % (st_p["host_bytes"], st_p["nbuckets"], st_f["host_bytes"],
                                st_f["nbuckets"]))


@case
def test_a_setting_given_twice_or_wrongly_is_refused_by_name(ctx):
    zsh = ctx.zsh
    raises(lambda: new_optimizer(ctx, offload_policy=zsh.OffloadPolicy(offload_optimizer="cpu"),
                                 nvme_dir="/var/tmp"),
           TypeError, "nvme_dir", "offload_policy", "give it once")
    raises(lambda: new_optimizer(ctx, mp_policy=zsh.MixedPrecisionPolicy(), loss_scale=2.0),
           TypeError, "loss_scale", "mp_policy")
    raises(lambda: new_optimizer(ctx, offload_policy=zsh.ShardingPolicy()),
           TypeError, "offload_policy", "OffloadPolicy", "ShardingPolicy")
    raises(lambda: zsh.OffloadPolicy(offload_optimizer="tape"),
           ValueError, "offload_optimizer", "'tape'", "none, cpu, nvme")
    raises(lambda: zsh.ShardingPolicy(bucket_size=-1), ValueError, "bucket_size", ">= 0")
    raises(lambda: zsh.ShardingPolicy(hpz=0), ValueError, "hpz", "off, auto or a group size")
    raises(lambda: new_optimizer(ctx, bucket_sise=4), TypeError, "bucket_sise", "bucket_size")
    raises(lambda: new_optimizer(ctx, stage=1.5), TypeError, "stage", "integer")
    raises(lambda: new_optimizer(ctx, nesterov=2), TypeError, "nesterov", "True or False")
    raises(lambda: new_optimizer(ctx, kind="lamb"), ValueError, "kind", "'lamb'", "adamw")


@case
def test_zero_takes_the_policies_and_keywords_alike(ctx):
    ctx.need_torch()
    torch = ctx.torch
    from zeroshard.torch import ZeRO
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        policies, flat = policy_and_flat(ctx.zsh, d)
        configs = []
        for kw in (policies, flat):
            torch.manual_seed(5)
            zero = ZeRO(torch.nn.Linear(8, 4), stage=2, comm=ctx.comm, optimizer="adam",
                        betas=(0.5, 0.75), **kw)
            configs.append(zero.optimizer.config)
            zero.close()
    if configs[0] != configs[1]:
        raise AssertionError("policies give %s, keywords %s" % tuple(configs))
    if (configs[0]["kind"], configs[0]["beta1"], configs[0]["beta2"]) != (1, 0.5, 0.75):
        raise AssertionError("optimizer= and betas= gave %s" % configs[0])
    m = torch.nn.Linear(2, 2)
    raises(lambda: ZeRO(m, comm=ctx.comm, optimizer="sgd", kind="adam"),
           TypeError, "optimizer", "kind")
    raises(lambda: ZeRO(m, comm=ctx.comm, betas=(0.5, 0.5), beta1=0.5), TypeError, "betas")
    raises(lambda: ZeRO(m, comm=ctx.comm, mp_policy=ctx.zsh.MixedPrecisionPolicy(precision="bf16")),
           TypeError, "precision", "bf16", "fp32")
    raises(lambda: ZeRO(m, comm=ctx.comm, sharding_policy=ctx.zsh.ShardingPolicy(prefetch=2),
                        prefetch=1), TypeError, "prefetch", "sharding_policy")



@case
def test_lr_reads_and_sets_the_rate_and_refuses_a_bad_one_unchanged(ctx):
    opt = new_optimizer(ctx, lr=3e-4)
    try:
        assert opt.lr == 3e-4, opt.lr
        opt.lr = 1e-2
        assert opt.lr == 1e-2, opt.lr
        raises(lambda: setattr(opt, "lr", -1.0), ctx.zsh.ZshError, "zsh_optim_set_lr",
               "lr=-1")
        raises(lambda: setattr(opt, "lr", float("inf")), ctx.zsh.ZshError, "lr=inf")
        raises(lambda: setattr(opt, "lr", True), TypeError, "lr must be a number")
        raises(lambda: setattr(opt, "lr", "1e-3"), TypeError, "lr must be a number")
        assert opt.lr == 1e-2, "a refused rate changed it: %r" % opt.lr
        opt.lr = 0
        assert opt.lr == 0.0
    finally:
        opt.close()


@case
def test_set_weight_decay_and_clip_grad_norm_take_numbers_and_refuse_the_rest_by_name(ctx):
    import numpy as np
    n = ctx.comm.size
    opt = new_optimizer(ctx, kind="sgd", lr=1.0)
    try:
        buf = np.zeros(4, dtype=np.float32)
        p = opt.register("bias", buf)
        raises(lambda: opt.set_weight_decay(p, True), TypeError, "weight_decay must be a number")
        raises(lambda: opt.set_weight_decay(p, -1.0), ctx.zsh.ZshError,
               "parameter 'bias': weight_decay=-1")
        raises(lambda: opt.set_weight_decay("bias", 0.0), ValueError, "not a parameter")
        opt.set_weight_decay(p, 0.0)
        opt.setup()
        opt.grad_ready(p, np.full(4, 3.0, dtype=np.float32))  # summed: 3n each, norm 6n
        raises(lambda: opt.clip_grad_norm("1"), TypeError, "max_norm must be a number")
        raises(lambda: opt.clip_grad_norm(0.0), ctx.zsh.ZshError, "max_norm=0")
        norm = opt.clip_grad_norm(1.0)
        assert abs(norm - 6.0 * n) < 1e-9, norm
        opt.step()
        want = -3.0 * n / (6.0 * n + 1e-6)  # SGD at lr 1 from 0: minus the clipped gradient
        assert np.allclose(buf, want, rtol=1e-6), (buf, want)
    finally:
        opt.close()



@case
def test_optimizer_states_take_torchs_names_and_fp32_and_give_the_exact_bits(ctx):
    import numpy as np
    opt = new_optimizer(ctx, kind="sgd", lr=1.0, momentum=0.5)
    try:
        buf = np.zeros(5, dtype=np.float32)
        p = opt.register("w", buf)
        opt.setup()
        m = np.array([-0.0, 1.5, -2.0, 3.25, 0.0], dtype=np.float32)
        raises(lambda: opt.set_state(p, "exp_avg_sq", m), ctx.zsh.ZshError,
               "SGD keeps no exp_avg_sq")
        raises(lambda: opt.set_state(p, "momentum", m), ValueError, "not an optimizer state")
        raises(lambda: opt.set_state(p, "momentum_buffer", m.astype(np.float64)), ValueError,
               "it takes 5 of fp32")
        raises(lambda: opt.set_updates(p, -1), ValueError, "integer >= 0")
        raises(lambda: opt.set_updates(p, True), ValueError, "integer >= 0")
        opt.set_state(p, "momentum_buffer", m)
        opt.set_updates(p, 3)
        got = np.full(5, 7.0, dtype=np.float32)
        opt.get_state(p, "momentum_buffer", got)
        assert got.tobytes() == m.tobytes(), (got, m)
        assert opt.updates(p) == 3, opt.updates(p)
        opt.grad_ready(p, np.ones(5, dtype=np.float32))  # summed: n each
        opt.step()
        # torch.optim.SGD from a buffer: buf = 0.5 * buf + g, w -= lr * buf.
        want = -(0.5 * m + np.float32(ctx.comm.size))
        assert np.array_equal(buf, want), (buf, want)
        assert opt.updates(p) == 4, opt.updates(p)
    finally:
        opt.close()

if __name__ == "__main__":
    sys.exit(main(sys.argv))
