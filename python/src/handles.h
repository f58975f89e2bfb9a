// What both halves of the module share: the library's objects and buffers
// cross to Python as integers, and calls that may wait release the GIL.
#ifndef ZSH_PYTHON_HANDLES_H_
#define ZSH_PYTHON_HANDLES_H_

#include <pybind11/pybind11.h>

#include <cstdint>

#include <zeroshard.h>

namespace zsh_py {

using handle_t = std::uintptr_t;

inline zsh_comm_t *comm(handle_t h) { return reinterpret_cast<zsh_comm_t *>(h); }
inline void *buf(handle_t p) { return reinterpret_cast<void *>(p); }
inline handle_t handle(const void *p) { return reinterpret_cast<handle_t>(p); }

// Runs fn with the GIL released and returns its status as an int.
template <typename F> int nogil(F fn)
{
    pybind11::gil_scoped_release nogil;
    return static_cast<int>(fn());
}

} // namespace zsh_py

#endif
