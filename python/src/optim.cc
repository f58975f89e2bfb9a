// zeroshard._zeroshard's optimizer half: include/zeroshard/optim.h on integer
// handles and data pointers. The settings cross as a dict keyed by the field
// names of zsh_optim_config_t, so Python mirrors the struct without knowing
// its layout; python/zeroshard/optim.py checks every value first.
#include "optim.h"

#include "handles.h"

#include <cstring>
#include <string>

#include <zeroshard/optim.h>

namespace py = pybind11;

namespace {

using namespace zsh_py;

zsh_optim_t *opt(handle_t h) { return reinterpret_cast<zsh_optim_t *>(h); }
zsh_param_t *param(handle_t h) { return reinterpret_cast<zsh_param_t *>(h); }

py::dict config_dict(const zsh_optim_config_t &c)
{
    py::dict d;
    d["stage"] = c.stage;
    d["kind"] = static_cast<int>(c.kind);
    d["precision"] = static_cast<int>(c.precision);
    d["lr"] = c.lr;
    d["beta1"] = c.beta1;
    d["beta2"] = c.beta2;
    d["eps"] = c.eps;
    d["weight_decay"] = c.weight_decay;
    d["momentum"] = c.momentum;
    d["nesterov"] = c.nesterov;
    d["max_grad_norm"] = c.max_grad_norm;
    d["loss_scale"] = c.loss_scale;
    d["dynamic_loss_scale"] = c.dynamic_loss_scale;
    d["loss_scale_window"] = c.loss_scale_window;
    d["min_loss_scale"] = c.min_loss_scale;
    d["bucket_size"] = c.bucket_size;
    d["max_live_bytes"] = c.max_live_bytes;
    d["prefetch"] = c.prefetch;
    d["offload_optimizer"] = static_cast<int>(c.offload_optimizer);
    d["offload_params"] = static_cast<int>(c.offload_params);
    if (c.nvme_dir != nullptr)
        d["nvme_dir"] = std::string(c.nvme_dir);
    else
        d["nvme_dir"] = py::none();
    d["host_mem_limit"] = c.host_mem_limit;
    d["sub_group_size"] = c.sub_group_size;
    d["update_threads"] = c.update_threads;
    d["hpz"] = c.hpz;
    return d;
}

// Sets the fields named in d; raises KeyError for a name the struct lacks.
// c.nvme_dir points into *nvme_dir, which the caller keeps alive until
// zsh_optim_create has copied it; None or "" leave it NULL, so ZSH_NVME_DIR
// applies.
void config_apply(zsh_optim_config_t &c, const py::dict &d, std::string *nvme_dir)
{
    for (auto item : d) {
        std::string k = item.first.cast<std::string>();
        py::handle v = item.second;
        if (k == "stage") c.stage = v.cast<int>();
        else if (k == "kind") c.kind = static_cast<zsh_optim_kind_t>(v.cast<int>());
        else if (k == "precision") c.precision = static_cast<zsh_dtype_t>(v.cast<int>());
        else if (k == "lr") c.lr = v.cast<float>();
        else if (k == "beta1") c.beta1 = v.cast<float>();
        else if (k == "beta2") c.beta2 = v.cast<float>();
        else if (k == "eps") c.eps = v.cast<float>();
        else if (k == "weight_decay") c.weight_decay = v.cast<float>();
        else if (k == "momentum") c.momentum = v.cast<float>();
        else if (k == "nesterov") c.nesterov = v.cast<int>();
        else if (k == "max_grad_norm") c.max_grad_norm = v.cast<float>();
        else if (k == "loss_scale") c.loss_scale = v.cast<float>();
        else if (k == "dynamic_loss_scale") c.dynamic_loss_scale = v.cast<int>();
        else if (k == "loss_scale_window") c.loss_scale_window = v.cast<unsigned>();
        else if (k == "min_loss_scale") c.min_loss_scale = v.cast<float>();
        else if (k == "bucket_size") c.bucket_size = v.cast<std::size_t>();
        else if (k == "max_live_bytes") c.max_live_bytes = v.cast<std::size_t>();
        else if (k == "prefetch") c.prefetch = v.cast<int>();
        else if (k == "offload_optimizer") c.offload_optimizer = static_cast<zsh_offload_t>(v.cast<int>());
        else if (k == "offload_params") c.offload_params = static_cast<zsh_offload_t>(v.cast<int>());
        else if (k == "nvme_dir") {
            *nvme_dir = v.is_none() ? std::string() : v.cast<std::string>();
            c.nvme_dir = nvme_dir->empty() ? nullptr : nvme_dir->c_str();
        }
        else if (k == "host_mem_limit") c.host_mem_limit = v.cast<std::size_t>();
        else if (k == "sub_group_size") c.sub_group_size = v.cast<std::size_t>();
        else if (k == "update_threads") c.update_threads = v.cast<int>();
        else if (k == "hpz") c.hpz = v.cast<int>();
        else throw py::key_error("zsh_optim_config_t has no field " + k);
    }
}

py::dict stats_dict(const zsh_optim_stats_t &s)
{
    py::dict d;
    d["param_bytes"] = s.param_bytes;
    d["grad_bytes"] = s.grad_bytes;
    d["state_bytes"] = s.state_bytes;
    d["buffer_bytes"] = s.buffer_bytes;
    d["buffer_peak_bytes"] = s.buffer_peak_bytes;
    d["gathered_peak_bytes"] = s.gathered_peak_bytes;
    d["comm_bytes_last_step"] = s.comm_bytes_last_step;
    d["steps"] = s.steps;
    d["skipped_steps"] = s.skipped_steps;
    d["loss_scale"] = s.loss_scale;
    d["last_grad_norm"] = s.last_grad_norm;
    d["nbuckets"] = s.nbuckets;
    d["prefetch_hits"] = s.prefetch_hits;
    d["order_rebuilds"] = s.order_rebuilds;
    d["compute_bytes"] = s.compute_bytes;
    d["host_bytes"] = s.host_bytes;
    d["nvme_bytes"] = s.nvme_bytes;
    d["host_buffer_bytes"] = s.host_buffer_bytes;
    d["host_buffer_peak_bytes"] = s.host_buffer_peak_bytes;
    d["io_read_bytes"] = s.io_read_bytes;
    d["io_write_bytes"] = s.io_write_bytes;
    d["io_wait_s"] = s.io_wait_s;
    d["io_busy_s"] = s.io_busy_s;
    d["io_overlap_s"] = s.io_overlap_s;
    if (s.io_engine != nullptr)
        d["io_engine"] = std::string(s.io_engine);
    else
        d["io_engine"] = py::none();
    d["comm_bytes_cross_node_last_step"] = s.comm_bytes_cross_node_last_step;
    d["comm_bytes_node_last_step"] = s.comm_bytes_node_last_step;
    d["hpz"] = s.hpz;
    d["nnodes"] = s.nnodes;
    d["hpz_bytes"] = s.hpz_bytes;
    d["hpz_gathers"] = s.hpz_gathers;
    return d;
}

} // namespace

void zsh_py_bind_optim(py::module_ &m)
{
    m.def("optim_config_defaults", [] {
        zsh_optim_config_t c;
        zsh_optim_config_init(&c);
        return config_dict(c);
    });
    m.def("optim_create", [](handle_t h, const py::dict &d) {
        zsh_optim_config_t c;
        zsh_optim_config_init(&c);
        std::string nvme_dir;
        config_apply(c, d, &nvme_dir);
        zsh_optim_t *o = nullptr;
        int st = nogil([&] { return zsh_optim_create(comm(h), &c, &o); });
        return py::make_tuple(st, handle(o));
    });
    m.def("optim_destroy", [](handle_t h) {
        py::gil_scoped_release nogil;
        zsh_optim_destroy(opt(h));
    });
    m.def("optim_register", [](handle_t h, const std::string &name, std::size_t numel, int dt, handle_t b) {
        zsh_param_t *p = nullptr;
        int st = static_cast<int>(zsh_optim_register(opt(h), name.c_str(), numel, static_cast<zsh_dtype_t>(dt), buf(b), &p));
        return py::make_tuple(st, handle(p));
    });
    m.def("optim_setup", [](handle_t h) { return nogil([&] { return zsh_optim_setup(opt(h)); }); });
    m.def("optim_fetch", [](handle_t h, handle_t p) {
        void *data = nullptr;
        int st = nogil([&] { return zsh_optim_fetch(opt(h), param(p), &data); });
        return py::make_tuple(st, handle(data));
    });
    // Fetch, copy the values into out, release: a copy whose lifetime the
    // caller owns, so no Python object ever points into a gathered bucket.
    m.def("optim_fetch_into", [](handle_t h, handle_t p, handle_t out, std::size_t nbytes) {
        return nogil([&] {
            void *data = nullptr;
            zsh_status_t st = zsh_optim_fetch(opt(h), param(p), &data);
            if (st != ZSH_OK)
                return st;
            std::memcpy(buf(out), data, nbytes);
            return zsh_optim_release(opt(h), param(p));
        });
    });
    m.def("optim_release", [](handle_t h, handle_t p) { return static_cast<int>(zsh_optim_release(opt(h), param(p))); });
    m.def("optim_grad_ready", [](handle_t h, handle_t p, handle_t g) {
        return nogil([&] { return zsh_optim_grad_ready(opt(h), param(p), buf(g)); });
    });
    m.def("optim_set_param", [](handle_t h, handle_t p, handle_t v) {
        return nogil([&] { return zsh_optim_set_param(opt(h), param(p), buf(v)); });
    });
    m.def("optim_step", [](handle_t h) {
        int applied = 0;
        int st = nogil([&] { return zsh_optim_step(opt(h), &applied); });
        return py::make_tuple(st, applied);
    });
    m.def("optim_zero_grad", [](handle_t h) { return nogil([&] { return zsh_optim_zero_grad(opt(h)); }); });
    // Checkpoints (collective): the path is copied into a std::string while the
    // GIL is held, and the save or load runs without it.
    m.def("optim_save", [](handle_t h, const std::string &dir) {
        return nogil([&] { return zsh_optim_save(opt(h), dir.c_str()); });
    });
    m.def("optim_load", [](handle_t h, const std::string &dir) {
        return nogil([&] { return zsh_optim_load(opt(h), dir.c_str()); });
    });
    m.def("optim_loss_scale", [](handle_t h) { return zsh_optim_loss_scale(opt(h)); });
    m.def("optim_stats", [](handle_t h) {
        zsh_optim_stats_t s{};
        int st = static_cast<int>(zsh_optim_get_stats(opt(h), &s));
        return py::make_tuple(st, stats_dict(s));
    });
}
