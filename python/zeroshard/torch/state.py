"""ZeRO's state: the module's own state_dict() and load_state_dict() through
the layer (every parameter whole, loads into every copy the layer keeps), and
the layer's checkpoints and snapshots (zero.py's ZeRO has these methods
through _State; the optimizer's state dict is optim_state.py's)."""
import torch

import zeroshard
from zeroshard.errors import ERR_INVALID_ARG, ERR_UNSUPPORTED


# What a state hook's agreement carries beside the module's first parameter:
# a rank in another all-reduce of three int64 differs here.
_STATE_CALL = 0x5A5348


class _State:
    """State dicts, checkpoints and snapshots of a ZeRO (its attributes are
    zero.py's)."""

    # ---- state ----------------------------------------------------------------------
    def _full(self, i):
        if self._stage < 3:
            return self._tensors[i].detach().clone()
        full = self._empty(i)
        self._opt.gather(self._zparams[i], self._flat(i, full))
        return full

    def _hook_module_state(self):
        """The module's own state_dict() and load_state_dict() reach the layer,
        as FSDP's full state dict does, so a training loop's checkpoint code
        works unmodified: at stage 3 state_dict() gives each parameter whole
        (gathered: collective, every rank calls it), not the empty tensor a
        released parameter holds; at every stage load_state_dict() writes a
        parameter's values into every copy the layer keeps (the stage 3 shard,
        the fp32 master weights of mixed precision), every rank with the same
        values. Hooks on each module with parameters of its own, so a
        submodule's calls reach them too. Returns the hooks' handles."""
        handles = []
        for m in self._module.modules():
            own = [(name, self._index[id(p)]) for name, p in m._parameters.items()
                   if p is not None and id(p) in self._index]
            below = [(sub + ("." if sub else "") + name, self._index[id(p)])
                     for sub, s in m.named_modules() for name, p in s._parameters.items()
                     if p is not None and id(p) in self._index]
            if below:
                handles.append(m._register_load_state_dict_pre_hook(self._check_hook(m, below)))
            if own:
                if self._stage == 3:
                    handles.append(m._register_state_dict_hook(self._state_hook(own)))
                handles.append(m._register_load_state_dict_pre_hook(self._load_hook(own)))
        return handles

    def _check_hook(self, module, below):
        """Before a load writes anything: the parameters below the module
        called are all there (strict) and of their shapes, else it raises in
        torch's words and nothing is loaded (torch's own load would have
        written the modules before the one at fault)."""
        def hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs):
            missing, errors = [], []
            for name, i in below:
                v = state_dict.get(prefix + name)
                if v is None:
                    missing.append('"%s"' % (prefix + name))
                elif isinstance(v, torch.Tensor) and tuple(v.shape) != self._shapes[i]:
                    errors.append("size mismatch for %s: copying a param with shape %s from "
                                  "checkpoint, the shape in current model is %s."
                                  % (prefix + name, v.shape, torch.Size(self._shapes[i])))
            if strict and missing:
                errors.insert(0, "Missing key(s) in state_dict: %s." % ", ".join(missing))
            if errors:
                raise RuntimeError("Error(s) in loading state_dict for %s:\n\t%s\nNothing "
                                   "was loaded." % (type(module).__name__, "\n\t".join(errors)))
        return hook

    def _agree(self, what, own):
        """Stage 3, before a module's state hook gathers or writes: every rank
        is at the same module (collective: one all-reduce of three numbers).
        A call on some ranks only would otherwise pair its gathers with
        whatever collectives the others run next, or leave their shards as
        they were; this raises instead, naming the call."""
        if self._comm.size == 1:
            return
        first = own[0][1]
        t = torch.tensor([first, -first, _STATE_CALL], dtype=torch.int64)
        self._comm.all_reduce(t, op="max")
        if t.tolist() != [first, -first, _STATE_CALL]:
            raise RuntimeError("%s at stage 3 is collective: every rank calls it for the same "
                               "module, and the ranks reached it for different ones (this rank "
                               "at parameter %s)" % (what, self._zparams[first].name))

    def _state_hook(self, own):
        def hook(module, destination, prefix, local_metadata):
            if any(prefix + name in destination and
                   destination[prefix + name] is not self._tensors[i] for name, i in own):
                self._agree("state_dict()", own)
            for name, i in own:
                key = prefix + name
                # keep_vars=True (ZeRO's own calls among them) asks for the
                # parameters themselves, as they are.
                if key in destination and destination[key] is not self._tensors[i]:
                    if self._lent[i]:
                        self._own_lent()
                    destination[key] = self._full(i)
            return destination
        return hook

    def _load_hook(self, own):
        def hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs):
            if self._stage == 3:
                self._agree("load_state_dict()", own)
                # A lent bucket may hold these beside others: all released first.
                self._own_lent()
            for name, i in own:
                key = prefix + name
                v = state_dict.get(key)
                if not isinstance(v, torch.Tensor):
                    continue  # torch's own load reports it
                if tuple(v.shape) != self._shapes[i]:
                    error_msgs.append("size mismatch for %s: copying a param with shape %s "
                                      "from checkpoint, the shape in current model is %s."
                                      % (key, v.shape, torch.Size(self._shapes[i])))
                else:
                    self._load_param(i, v)
                # What torch's own load copies then: the released parameter
                # into itself, nothing.
                state_dict[key] = self._tensors[i].detach()
        return hook

    def _load_param(self, i, v):
        """Parameter i's values v (its shape) into every copy the layer keeps."""
        with torch.no_grad():
            v = self._flat(i, self._empty(i).copy_(v.detach()))
            if self._stage < 3:
                self._flat(i, self._tensors[i].data).copy_(v)
                v = self._flat(i, self._tensors[i].data)
            elif self._lent[i]:
                self._own_lent()
            self._opt.set_param(self._zparams[i], self._to_layer(v))
            if self._stage == 3 and self._live[i]:
                # Held gathered (kept after a forward, or inside gathered()):
                # a copy of the old values.
                self._flat(i, self._gathered[i]).copy_(v)

    # ---- checkpoints ------------------------------------------------------------------
    def _live_opt(self, what):
        if self._opt is None:
            raise zeroshard.ZshError(ERR_INVALID_ARG, "this ZeRO was closed")
        if self._stream is not None:
            raise zeroshard.ZshError(ERR_UNSUPPORTED, "%s: the parameters are on %s, and the "
                                     "layer's checkpoints of device parameters are not supported "
                                     "yet; model.state_dict() gives the module's parameters"
                                     % (what, self._device))
        if self._stage == 3:
            self._own_lent()
        return self._opt

    def save(self, dir):
        """Save the training state to the checkpoint directory dir (collective:
        every rank passes the same directory): the parameters (fp32 master
        weights in mixed precision), the optimizer states, the step counters,
        the loss scaler and the hyperparameters, each rank writing its own
        part; dir/latest then names the new dir/step-<steps>. Between steps:
        after step() or zero_grad(), not between backward() and step().
        Returns the checkpoint's path. Buffers of the module (not parameters)
        are not in it: keep them with the module's own state_dict if it has
        any that matter."""
        return self._live_opt("ZeRO.save").save(dir)

    def load(self, dir):
        """Restore what save() wrote (collective), at any number of ranks and
        any stage: dir is a checkpoint directory (its latest) or one
        checkpoint. The module must have the same trainable parameters, names,
        sizes and dtype. Afterwards the module's parameters hold the loaded
        values (at stage 3, each gather from now on reads them; a parameter
        held gathered now is gathered again), and the optimizer states, step
        counters, loss scaler and hyperparameters are the saved ones, so
        training continues as if it had not stopped. Raises ZshError
        (ZSH_ERR_IO for a missing, truncated or corrupted file,
        ZSH_ERR_INVALID_ARG for another model or a gradient pending) and
        then leaves the module and the optimizer as they were."""
        self._reload("ZeRO.load", lambda opt: opt.load(dir))

    def snapshot(self):
        """Snapshot the training state into node memory (collective): what save()
        writes, into the directory ZSH_SNAPSHOT_DIR names (zshrun gives each
        job one in /dev/shm and removes it at the end). Call it every K steps:
        a job that zshrun --max-restarts started again after a rank died calls
        restore() and goes on from there, having lost at most K steps, without
        reading the disk. Only the newest complete snapshot is kept; a
        snapshot a death interrupted is never the one restored. On several
        nodes each rank's part is also copied to a rank of the next node.
        Between steps, as save()."""
        self._live_opt("ZeRO.snapshot").snapshot()

    def restore(self):
        """Restore the newest complete snapshot() (collective), at any number of
        ranks and any stage, as load() does. Raises ZshError (ZSH_ERR_IO when
        there is none, ZSH_ERR_INVALID_ARG without ZSH_SNAPSHOT_DIR) and then
        leaves the module and the optimizer as they were."""
        self._reload("ZeRO.restore", lambda opt: opt.restore())

    def _reload(self, what, read):
        opt = self._live_opt(what)
        if any(self._ready):
            raise zeroshard.ZshError(ERR_INVALID_ARG, what + ": gradients were handed over "
                                     "since the last step; call step() or zero_grad() first")
        read(opt)
        self._groups_from_layer()
        if self._stage == 3:
            # A parameter held gathered (inside gathered() or a forward) is a
            # copy of the old values: gather the loaded ones into it, in
            # registration order, which every rank holds alike.
            for i in range(len(self._tensors)):
                if self._live[i]:
                    opt.gather(self._zparams[i], self._flat(i, self._gathered[i]))
