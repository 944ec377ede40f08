// Package cron parses the schedules of the deleting policies and tells
// when they come next. The syntax is that of the cron library upstream
// validates cleanup policies with (robfig/cron's standard parser): five
// fields (minute, hour, day of month, month, day of week) of "*", "?",
// values, names (JAN-DEC, SUN-SAT, any case), ranges, lists and steps
// ("*/5", "1-30/2", "10/15"); the descriptors @yearly, @annually,
// @monthly, @weekly, @daily, @midnight, @hourly and "@every <duration>";
// and an optional "CRON_TZ=<zone> " or "TZ=<zone> " prefix. As in cron,
// when both the day of month and the day of week are restricted, a day
// matching either one is taken.
package cron

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule is a parsed schedule. It is immutable.
type Schedule struct {
	// fields (bit i set: value i allowed): minute, hour, dom, month, dow
	minute, hour, dom, month, dow uint64
	// domStar, dowStar: the field was "*" or "?"
	domStar, dowStar bool
	// every is the period of "@every" (0 otherwise)
	every time.Duration
	loc   *time.Location
}

type bounds struct {
	min, max int
	names    map[string]int
}

var (
	minutes = bounds{0, 59, nil}
	hours   = bounds{0, 23, nil}
	doms    = bounds{1, 31, nil}
	months  = bounds{1, 12, map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}}
	dows = bounds{0, 6, map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}}
)

// descriptors are the @ shorthands and the fields they stand for.
var descriptors = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

// Parse parses a schedule.
func Parse(spec string) (*Schedule, error) {
	s := &Schedule{loc: time.Local}
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, errors.New("empty spec string")
	}
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		i := strings.IndexByte(spec, ' ')
		if i < 0 {
			return nil, fmt.Errorf("a time zone prefix must be followed by a schedule: %q", spec)
		}
		_, zone, _ := strings.Cut(spec[:i], "=")
		loc, err := time.LoadLocation(zone)
		if err != nil {
			return nil, fmt.Errorf("provided bad location %s: %v", zone, err)
		}
		s.loc, spec = loc, strings.TrimSpace(spec[i:])
	}
	if strings.HasPrefix(spec, "@") {
		if d, ok := strings.CutPrefix(spec, "@every "); ok {
			every, err := time.ParseDuration(strings.TrimSpace(d))
			if err != nil {
				return nil, fmt.Errorf("failed to parse duration %s: %v", spec, err)
			}
			if every < time.Second {
				every = time.Second
			}
			s.every = every - every%time.Second
			return s, nil
		}
		fields, ok := descriptors[strings.ToLower(spec)]
		if !ok {
			return nil, fmt.Errorf("unrecognized descriptor: %s", spec)
		}
		spec = fields
	}
	fields := strings.Fields(spec)
	if len(fields) != 5 {
		return nil, fmt.Errorf("expected exactly 5 fields, found %d: %s", len(fields), spec)
	}
	var err error
	for i, f := range []struct {
		dst  *uint64
		star *bool
		b    bounds
	}{{&s.minute, nil, minutes}, {&s.hour, nil, hours}, {&s.dom, &s.domStar, doms}, {&s.month, nil, months}, {&s.dow, &s.dowStar, dows}} {
		var star bool
		if *f.dst, star, err = parseField(fields[i], f.b); err != nil {
			return nil, err
		}
		if f.star != nil {
			*f.star = star
		}
	}
	return s, nil
}

// parseField parses a comma-separated list of ranges; star reports a field
// that is "*" or "?" alone (unrestricted).
func parseField(field string, b bounds) (set uint64, star bool, err error) {
	star = field == "*" || field == "?"
	for _, part := range strings.Split(field, ",") {
		bitsOf, err := parseRange(part, b)
		if err != nil {
			return 0, false, err
		}
		set |= bitsOf
	}
	return set, star, nil
}

// parseRange parses "*", "?", "N", "N-M", each optionally "/step".
func parseRange(expr string, b bounds) (uint64, error) {
	rng, stepText, hasStep := strings.Cut(expr, "/")
	var start, end int
	switch {
	case rng == "*" || rng == "?":
		start, end = b.min, b.max
	default:
		lo, hi, isRange := strings.Cut(rng, "-")
		var err error
		if start, err = value(lo, b); err != nil {
			return 0, err
		}
		end = start
		if isRange {
			if end, err = value(hi, b); err != nil {
				return 0, err
			}
		} else if hasStep {
			end = b.max
		}
	}
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("step of range should be a positive number: %s", expr)
		}
		step = n
	}
	switch {
	case start < b.min:
		return 0, fmt.Errorf("beginning of range (%d) below minimum (%d): %s", start, b.min, expr)
	case end > b.max:
		return 0, fmt.Errorf("end of range (%d) above maximum (%d): %s", end, b.max, expr)
	case start > end:
		return 0, fmt.Errorf("beginning of range (%d) beyond end of range (%d): %s", start, end, expr)
	}
	var set uint64
	for v := start; v <= end; v += step {
		set |= 1 << uint(v)
	}
	return set, nil
}

// value parses a number or a name of the field.
func value(s string, b bounds) (int, error) {
	if v, ok := b.names[strings.ToLower(s)]; ok {
		return v, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("failed to parse int from %s", s)
	}
	return n, nil
}

// Next returns the first time after t that the schedule names, in t's
// location (the schedule's zone when it has one); the zero time when none
// comes within five years.
func (s *Schedule) Next(t time.Time) time.Time {
	if s.every > 0 {
		return t.Add(s.every - time.Duration(t.Nanosecond()))
	}
	orig := t.Location()
	if s.loc != time.Local {
		t = t.In(s.loc)
	}
	// the next whole minute after t
	t = t.Add(time.Minute - time.Duration(t.Second())*time.Second - time.Duration(t.Nanosecond()))
	limit := t.Year() + 5
	for t.Year() <= limit {
		switch {
		case !has(s.month, int(t.Month())):
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, t.Location())
		case !s.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, t.Location())
		case !has(s.hour, t.Hour()):
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, t.Location())
		case !has(s.minute, t.Minute()):
			t = t.Add(time.Minute)
		default:
			return t.In(orig)
		}
	}
	return time.Time{}
}

// dayMatches is cron's rule: with both day fields restricted, either
// matches; otherwise both must.
func (s *Schedule) dayMatches(t time.Time) bool {
	dom, dow := has(s.dom, t.Day()), has(s.dow, int(t.Weekday()))
	if s.domStar || s.dowStar {
		return dom && dow
	}
	return dom || dow
}

func has(set uint64, v int) bool { return set&(1<<uint(v)) != 0 }
