# _typeout: dates, times and intervals (waldecode/types/datetime.py).
# Included by native/_typeout.pyx at this point of the module (Cython include: one
# module, one namespace; the order of the sections is the order of the includes).

# -- dates and times (datetime.py) -----------------------------------------------------------------

cdef void j2date(long long jd, long long *year, int *month, int *day) noexcept nogil:
    """datetime.c j2date (with the reference's floor division for any Julian day)."""
    cdef long long julian = jd + 32044
    cdef long long quad = fdiv(julian, 146097)
    cdef long long extra = (julian - quad * 146097) * 4 + 3
    cdef long long y
    julian += 60 + quad * 3 + fdiv(extra, 146097)
    quad = fdiv(julian, 1461)
    julian -= quad * 1461
    y = fdiv(julian * 4, 1461)
    if y != 0:
        julian = fmod(julian + 305, 365) + 123
    else:
        julian = fmod(julian + 306, 366) + 123
    y += quad * 4
    quad = fdiv(julian * 2141, 65536)
    year[0] = y - 4800
    month[0] = <int>(fmod(quad + 10, MONTHS_PER_YEAR) + 1)
    day[0] = <int>(julian - fdiv(7834 * quad, 256))


cdef long long date2j(long long year, long long month, long long day) noexcept nogil:
    cdef long long century, julian
    if month > 2:
        month += 1
        year += 4800
    else:
        month += 13
        year += 4799
    century = fdiv(year, 100)
    julian = year * 365 - 32167
    julian += fdiv(year, 4) - century + fdiv(century, 4)
    return julian + fdiv(7834 * month, 256) + day


cdef inline int put_year(OutBuf o, long long year) except -1:
    """Years BC print as 1 - year (the ' BC' comes at the end)."""
    return put_pad(o, year if year > 0 else -(year - 1), 4)


cdef int put_seconds(OutBuf o, long long sec, long long fsec, int precision, bint fillzeros) except -1:
    """AppendSeconds: seconds, then the fraction without trailing zeros."""
    cdef long long v, limit = 1
    cdef char tmp[24]
    cdef int i, k
    if fillzeros:
        put_pad(o, labs64(sec), 2)
    else:
        put_i64(o, labs64(sec))
    if fsec == 0:
        return 0
    v = labs64(fsec)
    for k in range(precision):
        limit *= 10
    ob_putc(o, c'.')
    if v >= limit:
        return put_i64(o, v)
    i = precision
    for k in range(precision - 1, -1, -1):
        tmp[k] = <char>(c'0' + v % 10)
        v //= 10
    while i > 0 and tmp[i - 1] == c'0':
        i -= 1
    return ob_put(o, tmp, i)


cdef int put_timezone(OutBuf o, long long tz, int style) except -1:
    """EncodeTimezone: ``tz`` is seconds west of Greenwich."""
    cdef long long sec = labs64(tz)
    cdef long long mins = sec // 60
    cdef long long hour
    sec = sec % 60
    hour = mins // 60
    mins = mins % 60
    ob_putc(o, c'+' if tz <= 0 else c'-')
    put2(o, hour)
    if sec != 0:
        ob_putc(o, c':')
        put2(o, mins)
        ob_putc(o, c':')
        return put2(o, sec)
    if mins != 0 or style == USE_XSD_DATES:
        ob_putc(o, c':')
        return put2(o, mins)
    return 0


cdef int put_date_only(OutBuf o, long long year, int mon, int mday, int style, int order) except -1:
    """EncodeDateOnly."""
    if style == USE_ISO_DATES or style == USE_XSD_DATES:
        put_year(o, year)
        ob_putc(o, c'-')
        put2(o, mon)
        ob_putc(o, c'-')
        put2(o, mday)
    elif style == USE_SQL_DATES:
        if order == DATEORDER_DMY:
            put2(o, mday)
            ob_putc(o, c'/')
            put2(o, mon)
        else:
            put2(o, mon)
            ob_putc(o, c'/')
            put2(o, mday)
        ob_putc(o, c'/')
        put_year(o, year)
    elif style == USE_GERMAN_DATES:
        put2(o, mday)
        ob_putc(o, c'.')
        put2(o, mon)
        ob_putc(o, c'.')
        put_year(o, year)
    else:
        if order == DATEORDER_DMY:
            put2(o, mday)
            ob_putc(o, c'-')
            put2(o, mon)
        else:
            put2(o, mon)
            ob_putc(o, c'-')
            put2(o, mday)
        ob_putc(o, c'-')
        put_year(o, year)
    if year <= 0:
        put_lit(o, b" BC")
    return 0


cdef int put_time_of_day(OutBuf o, long long hour, long long minute, long long sec, long long fsec,
                         int precision) except -1:
    put2(o, hour)
    ob_putc(o, c':')
    put2(o, minute)
    ob_putc(o, c':')
    return put_seconds(o, sec, fsec, precision, True)


cdef int put_date_time(OutBuf o, long long year, int mon, int mday, long long hour, long long minute,
                       long long sec, long long fsec, bint has_tz, long long tz, const char *tzn, int tzn_len,
                       int style, int order) except -1:
    """EncodeDateTime (``has_tz`` False: no zone printed; ``tzn_len`` 0: no abbreviation)."""
    cdef long long wday
    if style == USE_ISO_DATES or style == USE_XSD_DATES:
        put_year(o, year)
        ob_putc(o, c'-')
        put2(o, mon)
        ob_putc(o, c'-')
        put2(o, mday)
        ob_putc(o, c' ' if style == USE_ISO_DATES else c'T')
        put_time_of_day(o, hour, minute, sec, fsec, MAX_TIMESTAMP_PRECISION)
        if has_tz:
            put_timezone(o, tz, style)
    elif style == USE_SQL_DATES or style == USE_GERMAN_DATES:
        if style == USE_GERMAN_DATES:
            put2(o, mday)
            ob_putc(o, c'.')
            put2(o, mon)
            ob_putc(o, c'.')
        elif order == DATEORDER_DMY:
            put2(o, mday)
            ob_putc(o, c'/')
            put2(o, mon)
            ob_putc(o, c'/')
        else:
            put2(o, mon)
            ob_putc(o, c'/')
            put2(o, mday)
            ob_putc(o, c'/')
        put_year(o, year)
        ob_putc(o, c' ')
        put_time_of_day(o, hour, minute, sec, fsec, MAX_TIMESTAMP_PRECISION)
        if has_tz:
            if tzn_len:
                ob_putc(o, c' ')
                ob_put(o, tzn, tzn_len)
            else:
                put_timezone(o, tz, style)
    else:
        wday = fmod(date2j(year, mon, mday) + 1, 7)
        ob_put(o, DAY_NAMES + 3 * wday, 3)
        ob_putc(o, c' ')
        if order == DATEORDER_DMY:
            put2(o, mday)
            ob_putc(o, c' ')
            ob_put(o, MONTH_NAMES + 3 * (mon - 1), 3)
        else:
            ob_put(o, MONTH_NAMES + 3 * (mon - 1), 3)
            ob_putc(o, c' ')
            put2(o, mday)
        ob_putc(o, c' ')
        put_time_of_day(o, hour, minute, sec, fsec, MAX_TIMESTAMP_PRECISION)
        ob_putc(o, c' ')
        put_year(o, year)
        if has_tz:
            ob_putc(o, c' ')
            if tzn_len:
                ob_put(o, tzn, tzn_len)
            else:
                put_timezone(o, tz, style)
    if year <= 0:
        put_lit(o, b" BC")
    return 0


cdef int put_date(OutBuf o, int days, int style, int order) except -1:
    """date_out."""
    cdef long long y
    cdef int m, d
    if days == DATEVAL_NOBEGIN:
        return put_lit(o, b"-infinity")
    if days == DATEVAL_NOEND:
        return put_lit(o, b"infinity")
    j2date(<long long>days + POSTGRES_EPOCH_JDATE, &y, &m, &d)
    return put_date_only(o, y, m, d, style, order)


cdef int put_time(OutBuf o, long long t) except -1:
    """time_out's EncodeTimeOnly without a zone (``t`` >= 0 microseconds)."""
    cdef long long hour = t // USECS_PER_HOUR
    t -= hour * USECS_PER_HOUR
    cdef long long minute = t // USECS_PER_MINUTE
    t -= minute * USECS_PER_MINUTE
    return put_time_of_day(o, hour, minute, t // USECS_PER_SEC, t % USECS_PER_SEC, MAX_TIME_PRECISION)


cdef int put_timestamp(OutBuf o, long long ts, int style, int order) except -1:
    """timestamp_out."""
    cdef long long date, t, y, hour, minute
    cdef int mo, d
    if ts == DT_NOBEGIN:
        return put_lit(o, b"-infinity")
    if ts == DT_NOEND:
        return put_lit(o, b"infinity")
    date = fdiv(ts, USECS_PER_DAY)
    t = fmod(ts, USECS_PER_DAY)
    j2date(date + POSTGRES_EPOCH_JDATE, &y, &mo, &d)
    hour = t // USECS_PER_HOUR
    t -= hour * USECS_PER_HOUR
    minute = t // USECS_PER_MINUTE
    t -= minute * USECS_PER_MINUTE
    return put_date_time(o, y, mo, d, hour, minute, t // USECS_PER_SEC, t % USECS_PER_SEC, False, 0, NULL, 0,
                         style, order)


# -- interval (datetime.py encode_interval) --------------------------------------------------------

cdef int put_postgres_int_part(OutBuf o, long long value, const char *units, bint *is_zero,
                               bint *is_before) except -1:
    """AddPostgresIntPart."""
    if value == 0:
        return 0
    if not is_zero[0]:
        ob_putc(o, c' ')
    if is_before[0] and value > 0:
        ob_putc(o, c'+')
    put_i64(o, value)
    ob_putc(o, c' ')
    put_lit(o, units)
    if value != 1:
        ob_putc(o, c's')
    is_before[0] = value < 0
    is_zero[0] = False
    return 0


cdef int put_verbose_int_part(OutBuf o, long long value, const char *units, bint *is_zero,
                              bint *is_before) except -1:
    """AddVerboseIntPart."""
    if value == 0:
        return 0
    if is_zero[0]:
        is_before[0] = value < 0
        value = labs64(value)
    elif is_before[0]:
        value = -value
    ob_putc(o, c' ')
    put_i64(o, value)
    ob_putc(o, c' ')
    put_lit(o, units)
    if value != 1:
        ob_putc(o, c's')
    is_zero[0] = False
    return 0


cdef int put_iso8601_part(OutBuf o, long long value, char unit) except -1:
    if value:
        put_i64(o, value)
        ob_putc(o, unit)
    return 0


cdef int put_interval(OutBuf o, long long time, int day, int month, int style, int major) except -1:
    """interval_out: interval2itm, then EncodeInterval."""
    cdef long long year, mon, mday, hour, minute, sec, fsec
    cdef bint has_negative, has_positive, has_year_month, has_day_time, sql_standard_value
    cdef bint is_zero = True, is_before = False, minus
    if major >= 17:
        # INTERVAL_NOBEGIN / INTERVAL_NOEND (17+)
        if time == DT_NOBEGIN and day == DATEVAL_NOBEGIN and month == DATEVAL_NOBEGIN:
            return put_lit(o, b"-infinity")
        if time == DT_NOEND and day == DATEVAL_NOEND and month == DATEVAL_NOEND:
            return put_lit(o, b"infinity")
    # C division truncates toward zero, as interval2itm's does
    year = month // MONTHS_PER_YEAR
    mon = month - year * MONTHS_PER_YEAR
    mday = day
    hour = time // USECS_PER_HOUR
    time -= hour * USECS_PER_HOUR
    minute = time // USECS_PER_MINUTE
    time -= minute * USECS_PER_MINUTE
    sec = time // USECS_PER_SEC
    fsec = time - sec * USECS_PER_SEC

    if style == INTSTYLE_SQL_STANDARD:
        has_negative = year < 0 or mon < 0 or mday < 0 or hour < 0 or minute < 0 or sec < 0 or fsec < 0
        has_positive = year > 0 or mon > 0 or mday > 0 or hour > 0 or minute > 0 or sec > 0 or fsec > 0
        has_year_month = year != 0 or mon != 0
        has_day_time = mday != 0 or hour != 0 or minute != 0 or sec != 0 or fsec != 0
        sql_standard_value = not (has_negative and has_positive) and not (has_year_month and has_day_time)
        if has_negative and sql_standard_value:
            ob_putc(o, c'-')
            year = -year
            mon = -mon
            mday = -mday
            hour = -hour
            minute = -minute
            sec = -sec
            fsec = -fsec
        if not has_negative and not has_positive:
            return ob_putc(o, c'0')
        if not sql_standard_value:
            ob_putc(o, c'-' if (year < 0 or mon < 0) else c'+')
            put_i64(o, labs64(year))
            ob_putc(o, c'-')
            put_i64(o, labs64(mon))
            ob_putc(o, c' ')
            ob_putc(o, c'-' if mday < 0 else c'+')
            put_i64(o, labs64(mday))
            ob_putc(o, c' ')
            ob_putc(o, c'-' if (hour < 0 or minute < 0 or sec < 0 or fsec < 0) else c'+')
            put_i64(o, labs64(hour))
            ob_putc(o, c':')
            put_pad(o, labs64(minute), 2)
            ob_putc(o, c':')
            return put_seconds(o, sec, fsec, MAX_INTERVAL_PRECISION, True)
        if has_year_month:
            put_i64(o, year)
            ob_putc(o, c'-')
            return put_i64(o, mon)
        if mday != 0:
            put_i64(o, mday)
            ob_putc(o, c' ')
        put_i64(o, hour)
        ob_putc(o, c':')
        put_pad(o, minute, 2)
        ob_putc(o, c':')
        return put_seconds(o, sec, fsec, MAX_INTERVAL_PRECISION, True)

    if style == INTSTYLE_ISO_8601:
        if year == 0 and mon == 0 and mday == 0 and hour == 0 and minute == 0 and sec == 0 and fsec == 0:
            return put_lit(o, b"PT0S")
        ob_putc(o, c'P')
        put_iso8601_part(o, year, c'Y')
        put_iso8601_part(o, mon, c'M')
        put_iso8601_part(o, mday, c'D')
        if hour != 0 or minute != 0 or sec != 0 or fsec != 0:
            ob_putc(o, c'T')
        put_iso8601_part(o, hour, c'H')
        put_iso8601_part(o, minute, c'M')
        if sec != 0 or fsec != 0:
            if sec < 0 or fsec < 0:
                ob_putc(o, c'-')
            put_seconds(o, sec, fsec, MAX_INTERVAL_PRECISION, False)
            ob_putc(o, c'S')
        return 0

    if style == INTSTYLE_POSTGRES:
        put_postgres_int_part(o, year, b"year", &is_zero, &is_before)
        put_postgres_int_part(o, mon, b"mon", &is_zero, &is_before)
        put_postgres_int_part(o, mday, b"day", &is_zero, &is_before)
        if is_zero or hour != 0 or minute != 0 or sec != 0 or fsec != 0:
            minus = hour < 0 or minute < 0 or sec < 0 or fsec < 0
            if not is_zero:
                ob_putc(o, c' ')
            if minus:
                ob_putc(o, c'-')
            elif is_before:
                ob_putc(o, c'+')
            put2(o, labs64(hour))
            ob_putc(o, c':')
            put2(o, labs64(minute))
            ob_putc(o, c':')
            put_seconds(o, sec, fsec, MAX_INTERVAL_PRECISION, True)
        return 0

    # INTSTYLE_POSTGRES_VERBOSE
    ob_putc(o, c'@')
    put_verbose_int_part(o, year, b"year", &is_zero, &is_before)
    put_verbose_int_part(o, mon, b"mon", &is_zero, &is_before)
    put_verbose_int_part(o, mday, b"day", &is_zero, &is_before)
    put_verbose_int_part(o, hour, b"hour", &is_zero, &is_before)
    put_verbose_int_part(o, minute, b"min", &is_zero, &is_before)
    if sec != 0 or fsec != 0:
        ob_putc(o, c' ')
        if sec < 0 or (sec == 0 and fsec < 0):
            if is_zero:
                is_before = True
            elif not is_before:
                ob_putc(o, c'-')
        elif is_before:
            ob_putc(o, c'-')
        put_seconds(o, sec, fsec, MAX_INTERVAL_PRECISION, False)
        put_lit(o, b" sec")
        if labs64(sec) != 1 or fsec != 0:
            ob_putc(o, c's')
        is_zero = False
    if is_zero:
        put_lit(o, b" 0")
    if is_before:
        put_lit(o, b" ago")
    return 0
