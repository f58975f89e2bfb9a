// The optimizer bindings, added to the module by python/src/module.cc.
#ifndef ZSH_PYTHON_OPTIM_H_
#define ZSH_PYTHON_OPTIM_H_

#include <pybind11/pybind11.h>

void zsh_py_bind_optim(pybind11::module_ &m);

#endif
