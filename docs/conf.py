# Sphinx configuration of the ZeroShard manual (docs/build_manual.sh runs it;
# `make html` in a build tree). The pages are Markdown (MyST); the C API
# reference comes from the public headers' Doxygen comments through Breathe,
# from the XML that docs/build_manual.sh has doxygen write first.
import os

project = "ZeroShard"
author = "The ZeroShard authors"
copyright = "ZeroShard authors"
version = release = os.environ.get("ZSH_MANUAL_VERSION", "")

extensions = ["myst_parser", "breathe"]
source_suffix = {".md": "markdown"}
root_doc = "index"
# In a build in the source tree, make html and make docs write under docs/.
exclude_patterns = ["_build", "manual", "html"]

# Links to another page's heading ([x](install.md#install)) are resolved,
# and a missing one is a warning (so an error under -W).
myst_heading_anchors = 3

breathe_projects = {"zeroshard": os.environ.get("ZSH_DOXYGEN_XML", "doxygen-xml")}
breathe_default_project = "zeroshard"
breathe_domain_by_extension = {"h": "c"}

# With -n every reference must resolve, but the C library's and the
# toolkits' own types are not ZeroShard's to document.
nitpicky = True
nitpick_ignore = [("c:identifier", name) for name in (
    "size_t", "ssize_t", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t",
    "uint32_t", "int64_t", "uint64_t", "uintptr_t", "bool", "FILE",
    "MPI_Comm", "cudaStream_t")]
# The handles are opaque: zeroshard.h declares their structs and never
# defines them, so there is nothing for a reference to land on.
nitpick_ignore += [("c:identifier", "zsh_" + name) for name in (
    "comm", "request", "shard", "bucket", "tiled", "param", "optim")]

html_theme = "sphinx_rtd_theme"
html_title = "ZeroShard manual"
html_show_sourcelink = False
html_copy_source = False
