"""Native code shared by the compiled stages: C/C++ headers and their Cython declarations."""
