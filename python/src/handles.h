// What both halves of the module share: the library's objects and buffers
// cross to Python as integers, and calls that may wait release the GIL.
#ifndef ZSH_PYTHON_HANDLES_H_
#define ZSH_PYTHON_HANDLES_H_

#include <pybind11/pybind11.h>

#include <cstdint>
#include <mutex>
#include <vector>

#include <zeroshard.h>

namespace zsh_py {

using handle_t = std::uintptr_t;

inline zsh_comm_t *comm(handle_t h) { return reinterpret_cast<zsh_comm_t *>(h); }
inline void *buf(handle_t p) { return reinterpret_cast<void *>(p); }
inline handle_t handle(const void *p) { return reinterpret_cast<handle_t>(p); }

// A gradient lent to the optimizer (zsh_optim_grad_lend) holds a reference
// to its Python object until the layer says it is done with it. The layer
// says so from inside a call made without the GIL, so the object is queued
// there (lent_done) and its reference dropped once a call has the GIL back.
struct lent_queue {
    std::mutex              mu;
    std::vector<PyObject *> back;
};

inline lent_queue &lent()
{
    static lent_queue q;
    return q;
}

inline void lent_done(void *obj)
{
    std::lock_guard<std::mutex> hold(lent().mu);
    lent().back.push_back(static_cast<PyObject *>(obj));
}

inline void lent_drop()
{
    std::vector<PyObject *> back;
    {
        std::lock_guard<std::mutex> hold(lent().mu);
        back.swap(lent().back);
    }
    for (PyObject *obj : back)
        Py_DECREF(obj);
}

// Runs fn with the GIL released and returns its status as an int; then
// drops what the layer gave back meanwhile.
template <typename F> int nogil(F fn)
{
    int status;
    {
        pybind11::gil_scoped_release nogil;
        status = static_cast<int>(fn());
    }
    lent_drop();
    return status;
}

} // namespace zsh_py

#endif
