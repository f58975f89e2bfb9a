// zeroshard._zeroshard's optimizer half: include/zeroshard/optim.h on integer
// handles and data pointers. The settings cross as a dict keyed by the field
// names of zsh_optim_config_t, built from the rows of optim_settings.h, so
// Python mirrors the struct without knowing its layout;
// python/zeroshard/settings.py checks every value first.
#include "optim.h"

#include "handles.h"

#include "optim_settings.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <deque>
#include <iterator>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <pybind11/stl.h>

#include <zeroshard/optim.h>

namespace py = pybind11;

namespace {

using namespace zsh_py;

zsh_optim_t *opt(handle_t h) { return reinterpret_cast<zsh_optim_t *>(h); }
zsh_param_t *param(handle_t h) { return reinterpret_cast<zsh_param_t *>(h); }

// Conversions by the field's C type: enums cross as ints, strings and
// pointers as str/int or None (NULL). A string set from Python points into
// *keep, which the caller holds until zsh_optim_create has copied it.
template <typename T> py::object to_py(T v)
{
    if constexpr (std::is_enum_v<T>)
        return py::int_(static_cast<int>(v));
    else
        return py::cast(v);
}
py::object to_py(const char *v) { return v != nullptr ? py::object(py::str(v)) : py::none(); }
py::object to_py(void *v) { return v != nullptr ? py::object(py::int_(handle(v))) : py::none(); }

template <typename T> void from_py(T &field, py::handle v, std::deque<std::string> *)
{
    if constexpr (std::is_enum_v<T>)
        field = static_cast<T>(v.cast<int>());
    else
        field = v.cast<T>();
}
void from_py(const char *&field, py::handle v, std::deque<std::string> *keep)
{
    keep->push_back(v.is_none() ? std::string() : v.cast<std::string>());
    field = keep->back().empty() ? nullptr : keep->back().c_str();
}
void from_py(void *&field, py::handle v, std::deque<std::string> *)
{
    field = v.is_none() ? nullptr : buf(v.cast<handle_t>());
}

struct setting {
    const char *name, *kind, *policy, *variable, *doc;
    py::object (*get)(const zsh_optim_config_t &c);
    void (*set)(zsh_optim_config_t &c, py::handle v, std::deque<std::string> *keep);
};

#define ZSH_PY_SETTING_ROW(_field, _kind, _policy, _variable, _doc)                        \
    {#_field, _kind, _policy, _variable, _doc,                                             \
     [](const zsh_optim_config_t &c) { return to_py(c._field); },                          \
     [](zsh_optim_config_t &c, py::handle v, std::deque<std::string> *keep) {              \
         from_py(c._field, v, keep);                                                       \
     }},
const setting settings[] = {ZSH_PY_OPTIM_SETTINGS(ZSH_PY_SETTING_ROW)};
#undef ZSH_PY_SETTING_ROW

// The rows cover the struct: each field starts where the one before it
// ends (padded to its alignment), and the last ends where the struct does.
// A field of zsh_optim_config_t that no row names fails here, but for one
// hidden in the padding before an 8-byte field, which test_settings.py's
// reading of the header finds.
#define ZSH_PY_SETTING_START(_field, ...) offsetof(zsh_optim_config_t, _field),
#define ZSH_PY_SETTING_ALIGN(_field, ...) alignof(decltype(zsh_optim_config_t::_field)),
#define ZSH_PY_SETTING_END(_field, ...) \
    offsetof(zsh_optim_config_t, _field) + sizeof(zsh_optim_config_t::_field),
constexpr std::size_t starts[] = {ZSH_PY_OPTIM_SETTINGS(ZSH_PY_SETTING_START)};
constexpr std::size_t aligns[] = {ZSH_PY_OPTIM_SETTINGS(ZSH_PY_SETTING_ALIGN)};
constexpr std::size_t ends[] = {sizeof(zsh_optim_config_t::size),
                                ZSH_PY_OPTIM_SETTINGS(ZSH_PY_SETTING_END)};
#undef ZSH_PY_SETTING_START
#undef ZSH_PY_SETTING_ALIGN
#undef ZSH_PY_SETTING_END
constexpr std::size_t align_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }
constexpr bool rows_adjacent()
{
    for (std::size_t i = 0; i < std::size(starts); i++)
        if (starts[i] != align_up(ends[i], aligns[i]))
            return false;
    return true;
}
static_assert(offsetof(zsh_optim_config_t, size) == 0, "zsh_optim_config_t starts with its size");
static_assert(rows_adjacent(), "python/src/optim_settings.h misses a field of zsh_optim_config_t "
                               "or lists them out of order");
static_assert(align_up(ends[std::size(starts)], alignof(zsh_optim_config_t)) ==
                  sizeof(zsh_optim_config_t),
              "zsh_optim_config_t has a field after the last row of python/src/optim_settings.h");

// Fetch, copy the values into out, release: a copy whose lifetime the
// caller owns, so no Python object ever points into a gathered bucket.
zsh_status_t fetch_into(zsh_optim_t *o, zsh_param_t *p, void *out, std::size_t nbytes)
{
    void *data = nullptr;
    zsh_status_t st = zsh_optim_fetch(o, p, &data);
    if (st != ZSH_OK)
        return st;
    std::memcpy(out, data, nbytes);
    return zsh_optim_release(o, p);
}

py::dict config_dict(const zsh_optim_config_t &c)
{
    py::dict d;
    for (const setting &s : settings)
        d[s.name] = s.get(c);
    return d;
}

// Sets the fields named in d; raises KeyError for a name no row has.
void config_apply(zsh_optim_config_t &c, const py::dict &d, std::deque<std::string> *keep)
{
    for (auto item : d) {
        std::string k = item.first.cast<std::string>();
        const setting *s = std::find_if(std::begin(settings), std::end(settings),
                                        [&](const setting &r) { return k == r.name; });
        if (s == std::end(settings))
            throw py::key_error("zsh_optim_config_t has no field " + k);
        s->set(c, item.second, keep);
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
    d["device"] = s.device;
    d["device_bytes"] = s.device_bytes;
    d["device_peak_bytes"] = s.device_peak_bytes;
    d["copy_bytes"] = s.copy_bytes;
    d["copy_s"] = s.copy_s;
    d["copy_wait_s"] = s.copy_wait_s;
    d["quantize_weights"] = s.quantize_weights;
    d["comm_bytes_quantized_last_step"] = s.comm_bytes_quantized_last_step;
    d["qwz_gathers"] = s.qwz_gathers;
    d["qwz_nonfinite_blocks"] = s.qwz_nonfinite_blocks;
    d["quantize_grads"] = s.quantize_grads;
    d["qgz_reductions"] = s.qgz_reductions;
    d["qgz_nonfinite_blocks"] = s.qgz_nonfinite_blocks;
    return d;
}

} // namespace

void zsh_py_bind_optim(py::module_ &m)
{
    // The rows of optim_settings.h: (name, kind, policy, variable, doc) in the
    // struct's order.
    m.def("optim_settings", [] {
        py::list out;
        for (const setting &s : settings)
            out.append(py::make_tuple(s.name, s.kind, s.policy, s.variable, s.doc));
        return out;
    });
    m.def("optim_config_defaults", [] {
        zsh_optim_config_t c;
        zsh_optim_config_init(&c);
        return config_dict(c);
    });
    // The config optim_create would pass for d, as the struct holds it.
    m.def("optim_config_resolve", [](const py::dict &d) {
        zsh_optim_config_t c;
        zsh_optim_config_init(&c);
        std::deque<std::string> keep;
        config_apply(c, d, &keep);
        return config_dict(c);
    });
    m.def("optim_create", [](handle_t h, const py::dict &d) {
        zsh_optim_config_t c;
        zsh_optim_config_init(&c);
        std::deque<std::string> keep;
        config_apply(c, d, &keep);
        zsh_optim_t *o = nullptr;
        int st = nogil([&] { return zsh_optim_create(comm(h), &c, &o); });
        return py::make_tuple(st, handle(o));
    });
    m.def("optim_destroy", [](handle_t h) {
        nogil([&] {
            zsh_optim_destroy(opt(h)); // gives back what was still lent
            return ZSH_OK;
        });
    });
    m.def("optim_register", [](handle_t h, const std::string &name, std::size_t numel, int dt, handle_t b) {
        zsh_param_t *p = nullptr;
        int st = static_cast<int>(zsh_optim_register(opt(h), name.c_str(), numel, static_cast<zsh_dtype_t>(dt), buf(b), &p));
        return py::make_tuple(st, handle(p));
    });
    m.def("optim_setup", [](handle_t h) { return nogil([&] { return zsh_optim_setup(opt(h)); }); });
    m.def("optim_param_place", [](handle_t h, handle_t p) {
        std::size_t bucket = 0, offset = 0, numel = 0;
        int st = nogil([&] { return zsh_optim_param_place(opt(h), param(p), &bucket, &offset, &numel); });
        return py::make_tuple(st, bucket, offset, numel);
    });
    m.def("optim_set_bucket_storage", [](handle_t h, std::size_t bucket, handle_t b, std::size_t nbytes) {
        return nogil([&] { return zsh_optim_set_bucket_storage(opt(h), bucket, buf(b), nbytes); });
    });
    m.def("optim_fetch", [](handle_t h, handle_t p) {
        void *data = nullptr;
        int st = nogil([&] { return zsh_optim_fetch(opt(h), param(p), &data); });
        return py::make_tuple(st, handle(data));
    });
    m.def("optim_get_param", [](handle_t h, handle_t p, handle_t out) {
        return nogil([&] { return zsh_optim_get_param(opt(h), param(p), buf(out)); });
    });
    // fetch_into for a list of (param, out, nbytes), in order, as one call
    // (a stage 3 unit's parameters): (status, how many were copied); it
    // stops at the first failure.
    m.def("optim_fetch_into_many", [](handle_t h, const std::vector<std::tuple<handle_t, handle_t, std::size_t>> &items) {
        std::size_t done = 0;
        int st = nogil([&] {
            for (const auto &[p, out, nbytes] : items) {
                zsh_status_t s = fetch_into(opt(h), param(p), buf(out), nbytes);
                if (s != ZSH_OK)
                    return s;
                done++;
            }
            return ZSH_OK;
        });
        return py::make_tuple(st, done);
    });
    m.def("optim_release", [](handle_t h, handle_t p) { return static_cast<int>(zsh_optim_release(opt(h), param(p))); });
    // zsh_optim_fetch of each, in order, as one call: (status, the values'
    // addresses). A failure releases those fetched before it, so either all
    // are fetched or none is.
    m.def("optim_fetch_many", [](handle_t h, const std::vector<handle_t> &params) {
        std::vector<handle_t> ptrs;
        ptrs.reserve(params.size());
        int st = nogil([&] {
            for (handle_t p : params) {
                void *data = nullptr;
                zsh_status_t s = zsh_optim_fetch(opt(h), param(p), &data);
                if (s != ZSH_OK) {
                    for (std::size_t k = 0; k < ptrs.size(); k++)
                        (void)zsh_optim_release(opt(h), param(params[k]));
                    return s;
                }
                ptrs.push_back(handle(data));
            }
            return ZSH_OK;
        });
        return py::make_tuple(st, ptrs);
    });
    // zsh_optim_release of each; all are released, the first failure returned.
    m.def("optim_release_many", [](handle_t h, const std::vector<handle_t> &params) {
        return nogil([&] {
            zsh_status_t first = ZSH_OK;
            for (handle_t p : params) {
                zsh_status_t s = zsh_optim_release(opt(h), param(p));
                if (first == ZSH_OK)
                    first = s;
            }
            return first;
        });
    });
    m.def("optim_grad_none", [](handle_t h, handle_t p) {
        return nogil([&] { return zsh_optim_grad_none(opt(h), param(p)); });
    });
    m.def("optim_backward_begin", [](handle_t h) {
        return nogil([&] { return zsh_optim_backward_begin(opt(h)); });
    });
    m.def("optim_grad_ready", [](handle_t h, handle_t p, handle_t g) {
        return nogil([&] { return zsh_optim_grad_ready(opt(h), param(p), buf(g)); });
    });
    // A gradient hook's work in one call: the caller's gradient handed over
    // multiplied by mul, rounded to float as torch's Tensor.mul(float)
    // rounds it on CPU, so the bits are the same; the caller's buffer is
    // only read.
    m.def("optim_grad_ready_scaled", [](handle_t h, handle_t p, handle_t g, double mul) {
        return nogil([&] {
            return zsh_optim_grad_ready_scaled(opt(h), param(p), buf(g), static_cast<float>(mul));
        });
    });
    // The reference taken here is dropped when the layer calls lent_done,
    // exactly once (handles.h).
    m.def("optim_grad_lend", [](handle_t h, handle_t p, py::object owner, handle_t g, double mul) {
        PyObject *obj = owner.release().ptr();
        return nogil([&] {
            return zsh_optim_grad_lend(opt(h), param(p), buf(g), static_cast<float>(mul),
                                       lent_done, obj);
        });
    });
    m.def("optim_grad_wait", [](handle_t h, handle_t p) {
        return nogil([&] { return zsh_optim_grad_wait(opt(h), param(p)); });
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
    m.def("optim_snapshot", [](handle_t h) {
        return nogil([&] { return zsh_optim_snapshot(opt(h)); });
    });
    m.def("optim_restore", [](handle_t h) {
        return nogil([&] { return zsh_optim_restore(opt(h)); });
    });
    m.def("optim_loss_scale", [](handle_t h) { return zsh_optim_loss_scale(opt(h)); });
    m.def("optim_set_lr", [](handle_t h, double lr) {
        return static_cast<int>(zsh_optim_set_lr(opt(h), lr));
    });
    m.def("optim_get_lr", [](handle_t h) {
        double lr = 0.0;
        int st = static_cast<int>(zsh_optim_get_lr(opt(h), &lr));
        return py::make_tuple(st, lr);
    });
    m.def("optim_set_weight_decay", [](handle_t h, handle_t p, double wd) {
        return static_cast<int>(zsh_optim_set_weight_decay(opt(h), param(p), wd));
    });
    m.def("optim_get_state", [](handle_t h, handle_t p, int kind, handle_t out) {
        return nogil([&] {
            return zsh_optim_get_state(opt(h), param(p), static_cast<zsh_optim_state_t>(kind),
                                       static_cast<float *>(buf(out)));
        });
    });
    m.def("optim_set_state", [](handle_t h, handle_t p, int kind, handle_t values) {
        return nogil([&] {
            return zsh_optim_set_state(opt(h), param(p), static_cast<zsh_optim_state_t>(kind),
                                       static_cast<const float *>(buf(values)));
        });
    });
    m.def("optim_get_updates", [](handle_t h, handle_t p) {
        unsigned long n = 0;
        int st = static_cast<int>(zsh_optim_get_updates(opt(h), param(p), &n));
        return py::make_tuple(st, n);
    });
    m.def("optim_set_updates", [](handle_t h, handle_t p, unsigned long n) {
        return static_cast<int>(zsh_optim_set_updates(opt(h), param(p), n));
    });
    m.def("optim_get_loss_scaler", [](handle_t h) {
        float scale = 0.0f;
        unsigned clean = 0;
        int st = static_cast<int>(zsh_optim_get_loss_scaler(opt(h), &scale, &clean));
        return py::make_tuple(st, scale, clean);
    });
    m.def("optim_set_loss_scaler", [](handle_t h, float scale, unsigned clean) {
        return static_cast<int>(zsh_optim_set_loss_scaler(opt(h), scale, clean));
    });
    m.def("optim_clip_grad_norm", [](handle_t h, double max_norm) {
        double norm = 0.0;
        int st = nogil([&] { return zsh_optim_clip_grad_norm(opt(h), max_norm, &norm); });
        return py::make_tuple(st, norm);
    });
    m.def("optim_stats", [](handle_t h) {
        zsh_optim_stats_t s{};
        int st = static_cast<int>(zsh_optim_get_stats(opt(h), &s));
        return py::make_tuple(st, stats_dict(s));
    });
}
