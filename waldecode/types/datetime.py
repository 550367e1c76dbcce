"""Dates, times, timestamps and intervals: date_out, time_out, timetz_out,
timestamp_out, timestamptz_out, interval_out (date.c, timestamp.c) with the
encoders of datetime.c (EncodeDateOnly, EncodeTimeOnly, EncodeDateTime,
EncodeInterval, EncodeTimezone, AppendSeconds) for every DateStyle
(ISO, SQL, Postgres, German; field order MDY, DMY, YMD) and IntervalStyle
(postgres, postgres_verbose, sql_standard, iso_8601).

Calendar arithmetic is PostgreSQL's own (j2date, date2j: proleptic Gregorian,
any year).  timestamptz converts to the session TimeZone with the IANA rules
from Python's ``zoneinfo`` (the system tzdata, as Debian's PostgreSQL uses);
``zoneinfo`` only covers years 1-9999, so instants outside are moved by whole
400-year Gregorian cycles (146097 days, which repeat every rule) into range to
find their UTC offset, as PostgreSQL's localtime.c does past its transitions.
"""

from __future__ import annotations

import datetime as _pydt
import re
import struct

from ..errors import CorruptRecordError, UnsupportedSettingError

_i32 = struct.Struct("<i")
_i64 = struct.Struct("<q")
_timetz = struct.Struct("<qi")
_interval = struct.Struct("<qii")

# src/include/datatype/timestamp.h
USECS_PER_DAY: "int64" = 86_400_000_000  # INT64CONST: products with them are 64-bit in C
USECS_PER_HOUR: "int64" = 3_600_000_000
USECS_PER_MINUTE: "int64" = 60_000_000
USECS_PER_SEC: "int64" = 1_000_000
SECS_PER_DAY = 86400
MONTHS_PER_YEAR = 12
POSTGRES_EPOCH_JDATE = 2451545  # date2j(2000, 1, 1)
UNIX_EPOCH_JDATE = 2440588  # date2j(1970, 1, 1)
DT_NOBEGIN = -0x8000000000000000
DT_NOEND = 0x7FFFFFFFFFFFFFFF
DATEVAL_NOBEGIN = -0x80000000
DATEVAL_NOEND = 0x7FFFFFFF
MAX_TIME_PRECISION = 6
MAX_TIMESTAMP_PRECISION = 6
MAX_INTERVAL_PRECISION = 6
MAXTZLEN = 10

# src/include/miscadmin.h: DateStyle, DateOrder, IntervalStyle
USE_POSTGRES_DATES = 0
USE_ISO_DATES = 1
USE_SQL_DATES = 2
USE_GERMAN_DATES = 3
USE_XSD_DATES = 4
DATEORDER_YMD = 0
DATEORDER_DMY = 1
DATEORDER_MDY = 2
INTSTYLE_POSTGRES = 0
INTSTYLE_POSTGRES_VERBOSE = 1
INTSTYLE_SQL_STANDARD = 2
INTSTYLE_ISO_8601 = 3

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat")


# -- settings ------------------------------------------------------------------------------------

def parse_datestyle(value: str) -> tuple[int, int]:
    """commands/variable.c check_datestyle: (style, order) from e.g. 'ISO, MDY'."""
    style = USE_ISO_DATES
    order = DATEORDER_MDY
    have_style = have_order = False
    for tok in str(value).replace(" ", ",").split(","):
        t = tok.strip().lower()
        if not t:
            continue
        if t == "iso":
            style, have_style = USE_ISO_DATES, True
        elif t == "sql":
            style, have_style = USE_SQL_DATES, True
        elif t.startswith("postgres"):
            style, have_style = USE_POSTGRES_DATES, True
        elif t == "german":
            style, have_style = USE_GERMAN_DATES, True
            if not have_order:
                order = DATEORDER_DMY  # German also sets DMY, unless explicitly overridden
        elif t == "ymd":
            order, have_order = DATEORDER_YMD, True
        elif t in ("dmy", "euro", "european"):
            order, have_order = DATEORDER_DMY, True
        elif t in ("mdy", "us", "noneuro", "noneuropean"):
            order, have_order = DATEORDER_MDY, True
        elif t == "default":
            if not have_style:
                style = USE_ISO_DATES
            if not have_order:
                order = DATEORDER_MDY
        else:
            raise UnsupportedSettingError(f"DateStyle = {value!r}: unrecognized keyword {tok.strip()!r}")
    return style, order


_INTERVALSTYLES = {"postgres": INTSTYLE_POSTGRES, "postgres_verbose": INTSTYLE_POSTGRES_VERBOSE,
                   "sql_standard": INTSTYLE_SQL_STANDARD, "iso_8601": INTSTYLE_ISO_8601}


def parse_intervalstyle(value: str) -> int:
    try:
        return _INTERVALSTYLES[str(value).strip().lower()]
    except KeyError:
        raise UnsupportedSettingError(f"IntervalStyle = {value!r} is not one of {', '.join(_INTERVALSTYLES)}") \
            from None


# -- time zones ----------------------------------------------------------------------------------

_CYCLE_SECS = 146097 * SECS_PER_DAY  # 400 Gregorian years
_PY_EPOCH = _pydt.datetime(1970, 1, 1)
_PY_LOW = int((_pydt.datetime(2, 1, 1) - _PY_EPOCH).total_seconds())
_PY_HIGH = int((_pydt.datetime(9998, 1, 1) - _PY_EPOCH).total_seconds())


class TimeZone:
    """The session TimeZone: ``localtime(utime)`` -> (gmtoff seconds east, abbreviation, isdst)."""

    def __init__(self, name: str, zone=None, fixed_offset: int | None = None, abbrev: str | None = None):
        self.name = name
        self._zone = zone
        self._fixed = fixed_offset
        self._abbrev = abbrev
        self._cache: dict = {}

    @property
    def fixed_offset(self) -> tuple[int, str] | None:
        """(gmtoff, abbreviation) of a zone without transitions (GMT, a POSIX offset), else None."""
        return None if self._fixed is None else (self._fixed, self._abbrev)

    def localtime(self, utime: int) -> tuple[int, str, bool]:
        if self._fixed is not None:
            return self._fixed, self._abbrev, False
        # Offsets change only at transitions: an hour whose first and last second agree is cached whole
        hour = utime // 3600
        hit = self._cache.get(hour)
        if hit is not None:
            return hit
        res = self._localtime(utime)
        first, last = self._localtime(hour * 3600), self._localtime(hour * 3600 + 3599)
        if first == last:
            if len(self._cache) > 100_000:
                self._cache.clear()
            self._cache[hour] = first
        return res

    def _localtime(self, utime: int) -> tuple[int, str, bool]:
        t = utime
        if t < _PY_LOW:
            t += ((_PY_LOW - t) // _CYCLE_SECS + 1) * _CYCLE_SECS
        elif t > _PY_HIGH:
            t -= ((t - _PY_HIGH) // _CYCLE_SECS + 1) * _CYCLE_SECS
        zone = self._zone
        loc = zone.fromutc((_PY_EPOCH + _pydt.timedelta(seconds=t)).replace(tzinfo=zone))
        off = loc.utcoffset()
        dst = loc.dst()
        return off.days * SECS_PER_DAY + off.seconds, loc.tzname(), bool(dst)


_POSIX_STD = re.compile(r"^(?:<([^>]*)>|([A-Za-z]{3,}))([+-]?)(\d{1,2})(?::(\d{1,2})(?::(\d{1,2}))?)?$")
_timezones: dict = {}


def load_timezone(name: str) -> TimeZone:
    """pgtz.c pg_tzset: an IANA zone file (case-insensitively), "GMT", or a POSIX
    "STDoffset" spec without daylight-saving rules (as SET TIME ZONE +5 stores it)."""
    tz = _timezones.get(name)
    if tz is not None:
        return tz
    import zoneinfo  # lazy: 4 ms (and sysconfig) that only a time zone's output needs

    key = name.strip()
    if key.upper() == "GMT":
        tz = TimeZone(name, fixed_offset=0, abbrev="GMT")
    else:
        zone = None
        if key and not key.startswith(("/", ".")) and ".." not in key:
            try:
                zone = zoneinfo.ZoneInfo(key)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
                lower = key.lower()
                for cand in zoneinfo.available_timezones():
                    if cand.lower() == lower:
                        zone = zoneinfo.ZoneInfo(cand)
                        break
        if zone is not None:
            tz = TimeZone(name, zone=zone)
        else:
            m = _POSIX_STD.match(key)
            if m is None:
                raise UnsupportedSettingError(f"TimeZone = {name!r} is neither a time zone in the system tzdata "
                                              f"nor a POSIX offset without daylight-saving rules")
            abbrev = (m.group(1) if m.group(1) is not None else m.group(2)).upper()
            west = int(m.group(4)) * 3600 + int(m.group(5) or 0) * 60 + int(m.group(6) or 0)
            if m.group(3) == "-":
                west = -west
            tz = TimeZone(name, fixed_offset=-west, abbrev=abbrev)
    _timezones[name] = tz
    return tz


# -- calendar ------------------------------------------------------------------------------------

def j2date(jd: int) -> tuple[int, int, int]:
    """datetime.c j2date: Julian day -> (year, month, day); year <= 0 is 1 - year BC."""
    julian = jd + 32044
    quad = julian // 146097
    extra = (julian - quad * 146097) * 4 + 3
    julian += 60 + quad * 3 + extra // 146097
    quad = julian // 1461
    julian -= quad * 1461
    y = julian * 4 // 1461
    julian = ((julian + 305) % 365 if y != 0 else (julian + 306) % 366) + 123
    y += quad * 4
    quad = julian * 2141 // 65536
    return y - 4800, (quad + 10) % MONTHS_PER_YEAR + 1, julian - 7834 * quad // 256


def date2j(year: int, month: int, day: int) -> int:
    if month > 2:
        month += 1
        year += 4800
    else:
        month += 13
        year += 4799
    century = year // 100
    julian = year * 365 - 32167
    julian += year // 4 - century + century // 4
    return julian + 7834 * month // 256 + day


def _tdiv(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


# -- encoders (datetime.c) -----------------------------------------------------------------------

def _zp(n: int, width: int) -> str:
    return "%0*d" % (width, n)


def append_seconds(sec: int, fsec: int, precision: int, fillzeros: bool) -> str:
    """AppendSeconds: seconds, then the fraction without trailing zeros."""
    s = "%02d" % abs(sec) if fillzeros else str(abs(sec))
    if fsec == 0:
        return s
    v = abs(fsec)
    if v >= 10 ** precision:
        return s + "." + str(v)
    return s + "." + ("%0*d" % (precision, v)).rstrip("0")


def encode_timezone(tz: int, style: int) -> str:
    """EncodeTimezone: ``tz`` is seconds west of Greenwich."""
    sec = abs(tz)
    mins, sec = divmod(sec, 60)
    hour, mins = divmod(mins, 60)
    sign = "+" if tz <= 0 else "-"
    if sec != 0:
        return f"{sign}{hour:02d}:{mins:02d}:{sec:02d}"
    if mins != 0 or style == USE_XSD_DATES:
        return f"{sign}{hour:02d}:{mins:02d}"
    return f"{sign}{hour:02d}"


def _year(year: int) -> str:
    return _zp(year if year > 0 else -(year - 1), 4)


def encode_date_only(year: int, mon: int, mday: int, style: int, order: int) -> str:
    """EncodeDateOnly."""
    if style == USE_ISO_DATES or style == USE_XSD_DATES:
        s = f"{_year(year)}-{mon:02d}-{mday:02d}"
    elif style == USE_SQL_DATES:
        s = (f"{mday:02d}/{mon:02d}" if order == DATEORDER_DMY else f"{mon:02d}/{mday:02d}") + "/" + _year(year)
    elif style == USE_GERMAN_DATES:
        s = f"{mday:02d}.{mon:02d}.{_year(year)}"
    else:
        s = (f"{mday:02d}-{mon:02d}" if order == DATEORDER_DMY else f"{mon:02d}-{mday:02d}") + "-" + _year(year)
    return s + " BC" if year <= 0 else s


def encode_time_only(hour: int, minute: int, sec: int, fsec: int, tz: int | None, style: int) -> str:
    """EncodeTimeOnly (tz None: no zone printed)."""
    s = f"{hour:02d}:{minute:02d}:{append_seconds(sec, fsec, MAX_TIME_PRECISION, True)}"
    if tz is not None:
        s += encode_timezone(tz, style)
    return s


def encode_date_time(year, mon, mday, hour, minute, sec, fsec, tz, tzn, style, order) -> str:
    """EncodeDateTime (tz None: no zone printed; tzn the zone abbreviation or None)."""
    secs = append_seconds(sec, fsec, MAX_TIMESTAMP_PRECISION, True)
    if style == USE_ISO_DATES or style == USE_XSD_DATES:
        sep = " " if style == USE_ISO_DATES else "T"
        s = f"{_year(year)}-{mon:02d}-{mday:02d}{sep}{hour:02d}:{minute:02d}:{secs}"
        if tz is not None:
            s += encode_timezone(tz, style)
    elif style == USE_SQL_DATES:
        d = f"{mday:02d}/{mon:02d}" if order == DATEORDER_DMY else f"{mon:02d}/{mday:02d}"
        s = f"{d}/{_year(year)} {hour:02d}:{minute:02d}:{secs}"
        if tz is not None:
            s += (" " + tzn[:MAXTZLEN]) if tzn else encode_timezone(tz, style)
    elif style == USE_GERMAN_DATES:
        s = f"{mday:02d}.{mon:02d}.{_year(year)} {hour:02d}:{minute:02d}:{secs}"
        if tz is not None:
            s += (" " + tzn[:MAXTZLEN]) if tzn else encode_timezone(tz, style)
    else:
        wday = (date2j(year, mon, mday) + 1) % 7
        if order == DATEORDER_DMY:
            d = f"{mday:02d} {_MONTHS[mon - 1]}"
        else:
            d = f"{_MONTHS[mon - 1]} {mday:02d}"
        s = f"{_DAYS[wday]} {d} {hour:02d}:{minute:02d}:{secs} {_year(year)}"
        if tz is not None:
            s += " " + (tzn[:MAXTZLEN] if tzn else encode_timezone(tz, style))
    return s + " BC" if year <= 0 else s


def _add_postgres_int_part(parts: list, value: int, units: str, state: list) -> None:
    """AddPostgresIntPart; state = [is_zero, is_before]."""
    if value == 0:
        return
    parts.append(f"{'' if state[0] else ' '}{'+' if state[1] and value > 0 else ''}{value} {units}"
                 f"{'s' if value != 1 else ''}")
    state[1] = value < 0
    state[0] = False


def _add_verbose_int_part(parts: list, value: int, units: str, state: list) -> None:
    """AddVerboseIntPart; state = [is_zero, is_before]."""
    if value == 0:
        return
    if state[0]:
        state[1] = value < 0
        value = abs(value)
    elif state[1]:
        value = -value
    parts.append(f" {value} {units}{'' if value == 1 else 's'}")
    state[0] = False


def _iso8601_part(value: int, unit: str) -> str:
    return f"{value}{unit}" if value else ""


def encode_interval(year: int, mon: int, mday: int, hour: int, minute: int, sec: int, fsec: int,
                    style: int) -> str:
    """EncodeInterval (the pg_itm fields, each signed as interval2itm leaves them)."""
    if style == INTSTYLE_SQL_STANDARD:
        has_negative = year < 0 or mon < 0 or mday < 0 or hour < 0 or minute < 0 or sec < 0 or fsec < 0
        has_positive = year > 0 or mon > 0 or mday > 0 or hour > 0 or minute > 0 or sec > 0 or fsec > 0
        has_year_month = year != 0 or mon != 0
        has_day_time = mday != 0 or hour != 0 or minute != 0 or sec != 0 or fsec != 0
        has_day = mday != 0
        sql_standard_value = not (has_negative and has_positive) and not (has_year_month and has_day_time)
        prefix = ""
        if has_negative and sql_standard_value:
            prefix = "-"
            year, mon, mday, hour, minute, sec, fsec = -year, -mon, -mday, -hour, -minute, -sec, -fsec
        if not has_negative and not has_positive:
            return prefix + "0"
        if not sql_standard_value:
            year_sign = "-" if (year < 0 or mon < 0) else "+"
            day_sign = "-" if mday < 0 else "+"
            sec_sign = "-" if (hour < 0 or minute < 0 or sec < 0 or fsec < 0) else "+"
            return (f"{prefix}{year_sign}{abs(year)}-{abs(mon)} {day_sign}{abs(mday)} "
                    f"{sec_sign}{abs(hour)}:{abs(minute):02d}:"
                    f"{append_seconds(sec, fsec, MAX_INTERVAL_PRECISION, True)}")
        if has_year_month:
            return f"{prefix}{year}-{mon}"
        if has_day:
            return (f"{prefix}{mday} {hour}:{minute:02d}:"
                    f"{append_seconds(sec, fsec, MAX_INTERVAL_PRECISION, True)}")
        return f"{prefix}{hour}:{minute:02d}:{append_seconds(sec, fsec, MAX_INTERVAL_PRECISION, True)}"

    if style == INTSTYLE_ISO_8601:
        if year == 0 and mon == 0 and mday == 0 and hour == 0 and minute == 0 and sec == 0 and fsec == 0:
            return "PT0S"
        s = "P" + _iso8601_part(year, "Y") + _iso8601_part(mon, "M") + _iso8601_part(mday, "D")
        if hour != 0 or minute != 0 or sec != 0 or fsec != 0:
            s += "T"
        s += _iso8601_part(hour, "H") + _iso8601_part(minute, "M")
        if sec != 0 or fsec != 0:
            if sec < 0 or fsec < 0:
                s += "-"
            s += append_seconds(sec, fsec, MAX_INTERVAL_PRECISION, False) + "S"
        return s

    state = [True, False]  # is_zero, is_before
    parts: list = []
    if style == INTSTYLE_POSTGRES:
        _add_postgres_int_part(parts, year, "year", state)
        _add_postgres_int_part(parts, mon, "mon", state)
        _add_postgres_int_part(parts, mday, "day", state)
        if state[0] or hour != 0 or minute != 0 or sec != 0 or fsec != 0:
            minus = hour < 0 or minute < 0 or sec < 0 or fsec < 0
            parts.append(f"{'' if state[0] else ' '}{'-' if minus else ('+' if state[1] else '')}"
                         f"{abs(hour):02d}:{abs(minute):02d}:"
                         f"{append_seconds(sec, fsec, MAX_INTERVAL_PRECISION, True)}")
        return "".join(parts)

    # INTSTYLE_POSTGRES_VERBOSE
    parts.append("@")
    _add_verbose_int_part(parts, year, "year", state)
    _add_verbose_int_part(parts, mon, "mon", state)
    _add_verbose_int_part(parts, mday, "day", state)
    _add_verbose_int_part(parts, hour, "hour", state)
    _add_verbose_int_part(parts, minute, "min", state)
    if sec != 0 or fsec != 0:
        parts.append(" ")
        if sec < 0 or (sec == 0 and fsec < 0):
            if state[0]:
                state[1] = True
            elif not state[1]:
                parts.append("-")
        elif state[1]:
            parts.append("-")
        parts.append(append_seconds(sec, fsec, MAX_INTERVAL_PRECISION, False))
        parts.append(f" sec{'s' if (abs(sec) != 1 or fsec != 0) else ''}")
        state[0] = False
    if state[0]:
        parts.append(" 0")
    if state[1]:
        parts.append(" ago")
    return "".join(parts)


# -- output functions ----------------------------------------------------------------------------

def _fixed(value, n: int, what: str):
    if len(value) != n:
        raise CorruptRecordError(f"{what} datum is {len(value)} bytes, expected {n}")


def date_text(days: int, style: int, order: int) -> str:
    if days == DATEVAL_NOBEGIN:
        return "-infinity"
    if days == DATEVAL_NOEND:
        return "infinity"
    y, m, d = j2date(days + POSTGRES_EPOCH_JDATE)
    return encode_date_only(y, m, d, style, order)


def date_out(value, typ, ctx) -> str:
    _fixed(value, 4, "date")
    return date_text(_i32.unpack(value)[0], ctx.datestyle, ctx.dateorder)


def _time2tm(t: int):
    hour, t = divmod(t, USECS_PER_HOUR)
    minute, t = divmod(t, USECS_PER_MINUTE)
    sec, fsec = divmod(t, USECS_PER_SEC)
    return hour, minute, sec, fsec


def time_out(value, typ, ctx) -> str:
    _fixed(value, 8, "time")
    t = _i64.unpack(value)[0]
    if t < 0:
        raise CorruptRecordError(f"time datum {t} is negative")
    h, m, s, f = _time2tm(t)
    return encode_time_only(h, m, s, f, None, ctx.datestyle)


def timetz_out(value, typ, ctx) -> str:
    _fixed(value, 12, "timetz")
    t, zone = _timetz.unpack(value)
    if t < 0:
        raise CorruptRecordError(f"timetz datum {t} is negative")
    h, m, s, f = _time2tm(t)
    return encode_time_only(h, m, s, f, zone, ctx.datestyle)


def timestamp_text(ts: int, style: int, order: int) -> str:
    if ts == DT_NOBEGIN:
        return "-infinity"
    if ts == DT_NOEND:
        return "infinity"
    date, t = divmod(ts, USECS_PER_DAY)
    y, mo, d = j2date(date + POSTGRES_EPOCH_JDATE)
    h, mi, s, f = _time2tm(t)
    return encode_date_time(y, mo, d, h, mi, s, f, None, None, style, order)


def timestamptz_text(ts: int, zone: TimeZone, style: int, order: int) -> str:
    """timestamptz_out: timestamp2tm with the session zone, then EncodeDateTime."""
    if ts == DT_NOBEGIN:
        return "-infinity"
    if ts == DT_NOEND:
        return "infinity"
    fsec = ts % USECS_PER_SEC
    utime = (ts - fsec) // USECS_PER_SEC + (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY
    gmtoff, abbrev, _isdst = zone.localtime(utime)
    days, secs = divmod(utime + gmtoff, SECS_PER_DAY)
    y, mo, d = j2date(days + UNIX_EPOCH_JDATE)
    h, secs = divmod(secs, 3600)
    mi, s = divmod(secs, 60)
    return encode_date_time(y, mo, d, h, mi, s, fsec, -gmtoff, abbrev, style, order)


def timestamp_out(value, typ, ctx) -> str:
    _fixed(value, 8, "timestamp")
    return timestamp_text(_i64.unpack(value)[0], ctx.datestyle, ctx.dateorder)


def timestamptz_out(value, typ, ctx) -> str:
    _fixed(value, 8, "timestamptz")
    return timestamptz_text(_i64.unpack(value)[0], ctx.timezone, ctx.datestyle, ctx.dateorder)


INT32_MAX = 0x7FFFFFFF
INT32_MIN = -0x80000000


def interval_text(time: int, day: int, month: int, style: int, major: int = 15) -> str:
    """interval_out: interval2itm then EncodeInterval."""
    if major >= 17:
        # INTERVAL_NOBEGIN / INTERVAL_NOEND (17+)
        if time == DT_NOBEGIN and day == INT32_MIN and month == INT32_MIN:
            return "-infinity"
        if time == DT_NOEND and day == INT32_MAX and month == INT32_MAX:
            return "infinity"
    year = _tdiv(month, MONTHS_PER_YEAR)
    mon = month - year * MONTHS_PER_YEAR
    hour = _tdiv(time, USECS_PER_HOUR)
    time -= hour * USECS_PER_HOUR
    minute = _tdiv(time, USECS_PER_MINUTE)
    time -= minute * USECS_PER_MINUTE
    sec = _tdiv(time, USECS_PER_SEC)
    fsec = time - sec * USECS_PER_SEC
    return encode_interval(year, mon, day, hour, minute, sec, fsec, style)


def interval_out(value, typ, ctx) -> str:
    _fixed(value, 16, "interval")
    time, day, month = _interval.unpack(value)
    return interval_text(time, day, month, ctx.intervalstyle, ctx.major)


OUTPUT_FUNCTIONS = {
    "date_out": date_out,
    "time_out": time_out,
    "timetz_out": timetz_out,
    "timestamp_out": timestamp_out,
    "timestamptz_out": timestamptz_out,
    "interval_out": interval_out,
}
