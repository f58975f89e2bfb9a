// zeroshard._zeroshard: the public C API (include/zeroshard.h) on integer
// handles and data pointers. Python (python/zeroshard/) validates every
// argument, owns the buffers and turns statuses into exceptions; this layer
// only converts, releases the GIL around anything that may wait, and bridges
// the out-of-band allgather of zsh_comm_init_oob() to a Python callable.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include <zeroshard.h>
#include <zeroshard/info.h>
#include <zeroshard/device.h>

#include "handles.h"
#include "optim.h"

namespace py = pybind11;

namespace {

using namespace zsh_py;

zsh_request_t *req(handle_t h) { return reinterpret_cast<zsh_request_t *>(h); }

// The OOB allgather: one call of the Python function per round, with the GIL
// held, finished before it returns. The Python side hands a function that
// never raises: it returns exactly `size` bytes objects of `len` bytes each,
// or None after keeping the reason to raise once zsh_comm_init_oob() returns.
struct oob_ctx {
    py::object fn;
    std::size_t size;
};

zsh_status_t oob_allgather(const void *send, void *recv, std::size_t len, void *ctx, void **req_p)
{
    auto *c = static_cast<oob_ctx *>(ctx);
    py::gil_scoped_acquire gil;
    try {
        py::object out = c->fn(py::bytes(static_cast<const char *>(send), len));
        if (!py::isinstance<py::list>(out))
            return ZSH_ERR_IO;
        py::list blocks = out;
        if (blocks.size() != c->size)
            return ZSH_ERR_IO;
        for (std::size_t r = 0; r < c->size; r++) {
            std::string b = blocks[r].cast<std::string>();
            if (b.size() != len)
                return ZSH_ERR_IO;
            std::memcpy(static_cast<char *>(recv) + r * len, b.data(), len);
        }
    } catch (py::error_already_set &e) {
        e.discard_as_unraisable("zeroshard out-of-band allgather");
        return ZSH_ERR_IO;
    } catch (...) {
        return ZSH_ERR_IO;
    }
    *req_p = ctx;
    return ZSH_OK;
}

zsh_status_t oob_test(void *) { return ZSH_OK; }
void oob_free(void *) {}

py::tuple comm_init()
{
    zsh_comm_t *c = nullptr;
    zsh_status_t st;
    {
        py::gil_scoped_release nogil;
        st = zsh_comm_init(&c);
    }
    return py::make_tuple(static_cast<int>(st), handle(c));
}

py::tuple comm_init_oob(int rank, int size, py::object fn)
{
    oob_ctx ctx{std::move(fn), static_cast<std::size_t>(size < 0 ? 0 : size)};
    zsh_oob_t oob{rank, size, &ctx, oob_allgather, oob_test, oob_free};
    zsh_comm_t *c = nullptr;
    zsh_status_t st;
    {
        py::gil_scoped_release nogil;
        st = zsh_comm_init_oob(&oob, &c);
    }
    return py::make_tuple(static_cast<int>(st), handle(c));
}

py::tuple comm_split(handle_t h, int color, int key)
{
    zsh_comm_t *c = nullptr;
    zsh_status_t st;
    {
        py::gil_scoped_release nogil;
        st = zsh_comm_split(comm(h), color, key, &c);
    }
    return py::make_tuple(static_cast<int>(st), handle(c));
}

// A nonblocking call: (status, request handle, 0 unless status is ZSH_OK).
template <typename F> py::tuple post(F fn)
{
    zsh_request_t *r = nullptr;
    int st = nogil([&] { return fn(&r); });
    return py::make_tuple(st, handle(r));
}

// zsh_info_print()'s text as a string, so that Python prints it through
// sys.stdout in order with its own output: (status, text). The topology
// section may meet a job's other ranks, so the GIL is released.
py::tuple info(unsigned sections)
{
    char *text = nullptr;
    std::size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (out == nullptr)
        return py::make_tuple(static_cast<int>(ZSH_ERR_NO_MEMORY), std::string());
    int st = nogil([&] { return zsh_info_print(out, sections); });
    std::fclose(out);
    std::string s(text, len);
    std::free(text);
    return py::make_tuple(st, s);
}

} // namespace

PYBIND11_MODULE(_zeroshard, m)
{
    m.doc() = "Raw bindings of libzeroshard's public API; use the zeroshard package instead.";

    m.def("status_string", [](int st) { return std::string(zsh_status_string(static_cast<zsh_status_t>(st))); });
    m.def("last_error", [] { return std::string(zsh_last_error()); });
    m.def("version", [] {
        int major = 0, minor = 0, patch = 0;
        zsh_get_version(&major, &minor, &patch);
        return py::make_tuple(major, minor, patch);
    });
    m.def("info", &info);
    m.attr("INFO_VERSION") = static_cast<unsigned>(ZSH_INFO_VERSION);
    m.attr("INFO_FEATURES") = static_cast<unsigned>(ZSH_INFO_FEATURES);
    m.attr("INFO_DEVICES") = static_cast<unsigned>(ZSH_INFO_DEVICES);
    m.attr("INFO_TOPOLOGY") = static_cast<unsigned>(ZSH_INFO_TOPOLOGY);
    m.attr("INFO_CONFIG") = static_cast<unsigned>(ZSH_INFO_CONFIG);
    m.attr("INFO_SELECT") = static_cast<unsigned>(ZSH_INFO_SELECT);

    // <zeroshard/device.h>: whether this build and process can use device
    // memory (0 with the reason in last_error).
    m.def("device_available", [] { return zsh_device_available(); });
    m.def("comm_init", &comm_init);
    m.def("comm_init_oob", &comm_init_oob);
    m.def("comm_split", &comm_split);
    m.def("comm_abort", [](handle_t h) { return nogil([&] { return zsh_comm_abort(comm(h)); }); });
    m.def("comm_destroy", [](handle_t h) { return nogil([&] { return zsh_comm_destroy(comm(h)); }); });
    m.def("comm_rank", [](handle_t h) { return zsh_comm_rank(comm(h)); });
    m.def("comm_size", [](handle_t h) { return zsh_comm_size(comm(h)); });
    m.def("comm_get_timeout", [](handle_t h) { return zsh_comm_get_timeout(comm(h)); });
    m.def("comm_set_timeout", [](handle_t h, double s) { return static_cast<int>(zsh_comm_set_timeout(comm(h), s)); });
    m.def("comm_get_deterministic", [](handle_t h) { return zsh_comm_get_deterministic(comm(h)); });
    m.def("comm_set_deterministic", [](handle_t h, int on) { return static_cast<int>(zsh_comm_set_deterministic(comm(h), on)); });

    m.def("allgather", [](handle_t h, handle_t s, handle_t r, std::size_t n, int dt) {
        return nogil([&] { return zsh_allgather(buf(s), buf(r), n, static_cast<zsh_dtype_t>(dt), comm(h)); });
    });
    m.def("reduce_scatter", [](handle_t h, handle_t s, handle_t r, std::size_t n, int dt, int op) {
        return nogil([&] {
            return zsh_reduce_scatter(buf(s), buf(r), n, static_cast<zsh_dtype_t>(dt), static_cast<zsh_op_t>(op), comm(h));
        });
    });
    m.def("allreduce", [](handle_t h, handle_t s, handle_t r, std::size_t n, int dt, int op) {
        return nogil([&] {
            return zsh_allreduce(buf(s), buf(r), n, static_cast<zsh_dtype_t>(dt), static_cast<zsh_op_t>(op), comm(h));
        });
    });
    m.def("broadcast", [](handle_t h, handle_t b, std::size_t n, int dt, int root) {
        return nogil([&] { return zsh_broadcast(buf(b), n, static_cast<zsh_dtype_t>(dt), root, comm(h)); });
    });
    m.def("alltoall", [](handle_t h, handle_t s, handle_t r, std::size_t n, int dt) {
        return nogil([&] { return zsh_alltoall(buf(s), buf(r), n, static_cast<zsh_dtype_t>(dt), comm(h)); });
    });
    m.def("barrier", [](handle_t h) { return nogil([&] { return zsh_barrier(comm(h)); }); });

    // <zeroshard/device.h>: blocking calls on device buffers, enqueued on a
    // cudaStream_t given as an integer (0: the default stream); they return
    // once enqueued or once done, as comm_set_stream's flags say.
    m.def("comm_set_stream", [](handle_t h, handle_t stream, unsigned flags) {
        return static_cast<int>(zsh_comm_set_stream(comm(h), buf(stream), flags));
    });
    m.attr("STREAM_ENQUEUE") = static_cast<unsigned>(ZSH_STREAM_ENQUEUE);
    m.def("allgather_stream", [](handle_t h, handle_t s, handle_t r, std::size_t n, int dt, handle_t stream) {
        return nogil([&] {
            return zsh_allgather_stream(buf(s), buf(r), n, static_cast<zsh_dtype_t>(dt), comm(h), buf(stream));
        });
    });
    m.def("reduce_scatter_stream",
          [](handle_t h, handle_t s, handle_t r, std::size_t n, int dt, int op, handle_t stream) {
              return nogil([&] {
                  return zsh_reduce_scatter_stream(buf(s), buf(r), n, static_cast<zsh_dtype_t>(dt),
                                                   static_cast<zsh_op_t>(op), comm(h), buf(stream));
              });
          });
    m.def("allreduce_stream", [](handle_t h, handle_t s, handle_t r, std::size_t n, int dt, int op, handle_t stream) {
        return nogil([&] {
            return zsh_allreduce_stream(buf(s), buf(r), n, static_cast<zsh_dtype_t>(dt), static_cast<zsh_op_t>(op),
                                        comm(h), buf(stream));
        });
    });
    m.def("broadcast_stream", [](handle_t h, handle_t b, std::size_t n, int dt, int root, handle_t stream) {
        return nogil([&] {
            return zsh_broadcast_stream(buf(b), n, static_cast<zsh_dtype_t>(dt), root, comm(h), buf(stream));
        });
    });
    m.def("alltoall_stream", [](handle_t h, handle_t s, handle_t r, std::size_t n, int dt, handle_t stream) {
        return nogil([&] {
            return zsh_alltoall_stream(buf(s), buf(r), n, static_cast<zsh_dtype_t>(dt), comm(h), buf(stream));
        });
    });

    m.def("iallgather", [](handle_t h, handle_t s, handle_t r, std::size_t n, int dt) {
        return post([&](zsh_request_t **rp) {
            return zsh_iallgather(buf(s), buf(r), n, static_cast<zsh_dtype_t>(dt), comm(h), rp);
        });
    });
    m.def("ireduce_scatter", [](handle_t h, handle_t s, handle_t r, std::size_t n, int dt, int op) {
        return post([&](zsh_request_t **rp) {
            return zsh_ireduce_scatter(buf(s), buf(r), n, static_cast<zsh_dtype_t>(dt), static_cast<zsh_op_t>(op),
                                       comm(h), rp);
        });
    });
    m.def("iallreduce", [](handle_t h, handle_t s, handle_t r, std::size_t n, int dt, int op) {
        return post([&](zsh_request_t **rp) {
            return zsh_iallreduce(buf(s), buf(r), n, static_cast<zsh_dtype_t>(dt), static_cast<zsh_op_t>(op), comm(h),
                                  rp);
        });
    });

    m.def("ibroadcast", [](handle_t h, handle_t b, std::size_t n, int dt, int root) {
        return post([&](zsh_request_t **rp) {
            return zsh_ibroadcast(buf(b), n, static_cast<zsh_dtype_t>(dt), root, comm(h), rp);
        });
    });
    m.def("ialltoall", [](handle_t h, handle_t s, handle_t r, std::size_t n, int dt) {
        return post([&](zsh_request_t **rp) {
            return zsh_ialltoall(buf(s), buf(r), n, static_cast<zsh_dtype_t>(dt), comm(h), rp);
        });
    });
    m.def("ibarrier", [](handle_t h) { return post([&](zsh_request_t **rp) { return zsh_ibarrier(comm(h), rp); }); });
    m.def("isend", [](handle_t h, handle_t b, std::size_t n, int dt, int peer, int tag) {
        return post([&](zsh_request_t **rp) {
            return zsh_isend(buf(b), n, static_cast<zsh_dtype_t>(dt), peer, tag, comm(h), rp);
        });
    });
    m.def("irecv", [](handle_t h, handle_t b, std::size_t n, int dt, int peer, int tag) {
        return post([&](zsh_request_t **rp) {
            return zsh_irecv(buf(b), n, static_cast<zsh_dtype_t>(dt), peer, tag, comm(h), rp);
        });
    });
    m.attr("ANY_SOURCE") = ZSH_ANY_SOURCE;
    m.attr("TAG_MAX") = ZSH_TAG_MAX;
    // (status, the sender's comm rank, -1 unless status is ZSH_OK)
    m.def("request_source", [](handle_t r) {
        int src = -1;
        int st = zsh_request_source(req(r), &src);
        return py::make_tuple(st, src);
    });

    m.def("request_test", [](handle_t r) { return nogil([&] { return zsh_request_test(req(r)); }); });
    m.def("request_wait", [](handle_t r) { return nogil([&] { return zsh_request_wait(req(r)); }); });
    m.def("request_set_timeout", [](handle_t r, double s) { return static_cast<int>(zsh_request_set_timeout(req(r), s)); });
    m.def("request_free", [](handle_t r) {
        py::gil_scoped_release nogil;
        zsh_request_free(req(r));
    });

    zsh_py_bind_optim(m);
}
