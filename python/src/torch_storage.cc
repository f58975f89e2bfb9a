// zeroshard._zeroshard_torch: point a torch CPU storage at memory it does not
// own, so stage 3 hands torch the gathered bucket itself instead of a copy in
// a storage torch's allocator gives fresh pages at every gather, which the
// kernel zeroes on first touch (docs/DECISIONS.md, "Stage 3 lends its
// gathered buckets to torch"). Built against the headers of the
// torch found at configure time: a StorageImpl's layout is that version's
// own, so zeroshard.torch uses this module only under the same torch version
// (torch_version below) and copies otherwise.
//
// The memory stays the optimizer's. The storage's DataPtr has no deleter:
// the caller empties the storage (resize_(0)) before it releases the
// parameter, and a storage destroyed while attached frees nothing.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <c10/core/StorageImpl.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace py = pybind11;

namespace {

using item_t = std::tuple<std::uintptr_t, std::uintptr_t, std::size_t>;

// Checks every storage before changing any: each is on the CPU, resizable
// and empty (so nothing torch allocated is dropped).
void attach(const std::vector<item_t> &items)
{
    for (std::size_t k = 0; k < items.size(); k++) {
        auto *s = reinterpret_cast<c10::StorageImpl *>(std::get<0>(items[k]));
        if (s == nullptr || std::get<1>(items[k]) == 0)
            throw py::value_error("item " + std::to_string(k) + ": a NULL storage or pointer");
        if (s->device_type() != c10::DeviceType::CPU)
            throw py::value_error("item " + std::to_string(k) + ": the storage is not on the CPU");
        if (!s->resizable())
            throw py::value_error("item " + std::to_string(k) +
                                  ": the storage is not resizable (it could not be emptied)");
        if (s->nbytes() != 0)
            throw py::value_error("item " + std::to_string(k) + ": the storage holds " +
                                  std::to_string(s->nbytes()) + " bytes; attach empties only");
    }
    for (const item_t &it : items) {
        auto *s = reinterpret_cast<c10::StorageImpl *>(std::get<0>(it));
        s->set_data_ptr_noswap(
            c10::DataPtr(reinterpret_cast<void *>(std::get<1>(it)), c10::Device(c10::DeviceType::CPU)));
        s->set_nbytes(std::get<2>(it));
    }
}

} // namespace

PYBIND11_MODULE(_zeroshard_torch, m)
{
    m.doc() = "torch CPU storages pointed at memory zeroshard owns (stage 3's gathered buckets)";
    m.attr("torch_version") = ZSH_TORCH_VERSION;
    m.def("attach", &attach,
          "attach([(storage._cdata, ptr, nbytes), ...]): each empty CPU storage holds nbytes at "
          "ptr, without owning them, until it is resized");
}
