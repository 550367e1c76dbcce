# Cython's view of native/wd_xlogframe.h: the one page walker of the framers (_native's frame_segment,
# _waldump's Dump).  Declarations only: cimported, never imported.

cdef extern from "wd_xlogframe.h":
    ctypedef enum WdFrameEvent:
        WD_FRAME_RECORD
        WD_FRAME_FIRST
        WD_FRAME_DONE
        WD_FRAME_REFERENCE
        WD_FRAME_NOMEM

    ctypedef struct WdXLogFrame:
        const unsigned char *buf
        long long buflen
        unsigned long long seg_lsn
        unsigned int page_size
        unsigned long long seg_size
        unsigned int magic
        unsigned long long sysid
        unsigned long long end_lsn
        int verify_crc
        int stop_after_partial
        int firsts
        int by_catalog
        const unsigned int *cat_nodes
        long long cat_n
        unsigned int cat_mask
        long long pos
        long long cur_page
        int fresh
        int pending
        unsigned int latest_tli
        unsigned long long prev_lsn
        int rand_access
        int switch_seen
        unsigned long long next_lsn
        int in_partial
        unsigned char *partial
        size_t have
        size_t cap
        unsigned long long partial_lsn
        unsigned long long partial_total
        int partial_header_only
        int partial_seen
        const unsigned char *rec
        unsigned int rec_len
        unsigned long long lsn
        unsigned long long raw_end
        unsigned int xid

    WdFrameEvent wd_frame_next(WdXLogFrame *f) nogil
    int wd_frame_partial_add(WdXLogFrame *f, const unsigned char *p, size_t n) nogil


# FrameState <-> WdXLogFrame, the same for both framers
cdef inline int wd_frame_load(WdXLogFrame *f, buf, const unsigned char[:] view, unsigned long long seg_lsn, st,
                              bint verify_crc) except -1:
    """Start the walk of one segment buffer from ``st`` (a FrameState); ``f`` zeroed, its ``partial``
    buffer kept from an earlier walk (or NULL).  Without ``st.firsts`` the catalog mode is off, as in the
    reference; the caller sets ``cat_nodes`` when ``by_catalog``."""
    cdef const unsigned char[:] pv
    f.buf = &view[0] if view.shape[0] else NULL
    f.buflen = view.shape[0]
    f.seg_lsn = seg_lsn
    f.page_size = st.page_size
    f.seg_size = st.seg_size
    f.magic = st.magic
    f.sysid = st.sysid
    f.end_lsn = st.end_lsn
    f.verify_crc = verify_crc
    f.stop_after_partial = st.stop_after_partial
    f.firsts = st.firsts is not None
    f.by_catalog = f.firsts and st.catalog is not None
    f.pos = <long long>(<unsigned long long>st.next_lsn - seg_lsn)
    f.cur_page = -1
    f.pending = 0
    f.latest_tli = st.latest_tli
    f.prev_lsn = st.prev_lsn
    f.rand_access = st.rand_access
    f.switch_seen = False
    f.have = 0
    partial = st.partial
    f.in_partial = f.partial_seen = partial is not None
    if partial is not None:
        f.partial_lsn = st.partial_lsn
        f.partial_total = st.partial_total
        f.partial_header_only = -1 if st.partial_header_only is None else (1 if st.partial_header_only else 0)
        if len(partial):
            pv = partial
            if wd_frame_partial_add(f, &pv[0], pv.shape[0]) < 0:
                raise MemoryError()
    f.fresh = not f.in_partial and f.rand_access
    return 0


cdef inline int wd_frame_store(const WdXLogFrame *f, st) except -1:
    """Write the walk's state back to ``st``, for the next segment or the reference (``next_lsn`` as the
    walker set it)."""
    st.next_lsn = f.next_lsn
    st.latest_tli = f.latest_tli
    st.prev_lsn = f.prev_lsn
    st.rand_access = f.rand_access != 0
    if f.switch_seen:
        st.switch_seen = True
    st.partial = bytearray((<const char *>f.partial)[:f.have]) if f.in_partial else None
    if f.partial_seen:
        # as the reference leaves them, after the record too
        st.partial_lsn = f.partial_lsn
        st.partial_total = f.partial_total
        st.partial_header_only = None if f.partial_header_only < 0 else f.partial_header_only == 1
    return 0
