# The C-level entry points of waldecode._typeout (native/_typeout.pyx) that other extensions cimport
# (``from waldecode._typeout cimport ...``): kept under the module's package path, so that Cython finds
# it as the .pyx's own declarations and the importing extension loads waldecode._typeout itself.

cdef int append_change_at(object desc, object out, bytes head, int action, const unsigned char *newp,
                          Py_ssize_t newlen, const unsigned char *oldp, Py_ssize_t oldlen, object toast,
                          bint newline) except -1
