package jmespath

import (
	"strconv"
	"time"
)

// timeArg parses argument idx (0-based) as an RFC 3339 time.
func timeArg(name string, args []any, idx int) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, args[idx].(string))
	if err != nil {
		return time.Time{}, fnWrap(name, idx+1, err)
	}
	return t, nil
}

// durationArg parses argument idx (0-based) as a Go duration.
func durationArg(name string, args []any, idx int) (time.Duration, error) {
	d, err := time.ParseDuration(args[idx].(string))
	if err != nil {
		return 0, fnWrap(name, idx+1, err)
	}
	return d, nil
}

// jpTimeSince returns end - start. An empty layout means RFC 3339; an empty
// end means the Interpreter's clock.
func (i *Interpreter) jpTimeSince(args []any) (any, error) {
	layout, start, end := args[0].(string), args[1].(string), args[2].(string)
	if layout == "" {
		layout = time.RFC3339
	}
	t1, err := time.Parse(layout, start)
	if err != nil {
		return nil, fnWrap("time_since", 2, err)
	}
	t2 := i.cfg.now()
	if end != "" {
		if t2, err = time.Parse(layout, end); err != nil {
			return nil, fnWrap("time_since", 3, err)
		}
	}
	return t2.Sub(t1).String(), nil
}

func (i *Interpreter) jpTimeNow(args []any) (any, error) {
	return i.cfg.now().Format(time.RFC3339), nil
}

func (i *Interpreter) jpTimeNowUTC(args []any) (any, error) {
	return i.cfg.now().UTC().Format(time.RFC3339), nil
}

// jpTimeToCron renders "minute hour day-of-month month day-of-week" in the
// time's own offset.
func jpTimeToCron(args []any) (any, error) {
	t, err := timeArg("time_to_cron", args, 0)
	if err != nil {
		return nil, err
	}
	return strconv.Itoa(t.Minute()) + " " + strconv.Itoa(t.Hour()) + " " + strconv.Itoa(t.Day()) + " " +
		strconv.Itoa(int(t.Month())) + " " + strconv.Itoa(int(t.Weekday())), nil
}

func jpTimeAdd(args []any) (any, error) {
	t, err := timeArg("time_add", args, 0)
	if err != nil {
		return nil, err
	}
	d, err := durationArg("time_add", args, 1)
	if err != nil {
		return nil, err
	}
	return t.Add(d).Format(time.RFC3339), nil
}

// jpTimeParse converts a time in the given layout to RFC 3339. A layout that
// is an integer means the value is a Unix epoch in seconds (rendered in UTC).
func jpTimeParse(args []any) (any, error) {
	layout, value := args[0].(string), args[1].(string)
	if _, err := strconv.ParseInt(layout, 10, 64); err == nil {
		epoch, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return nil, fnWrap("time_parse", 2, err)
		}
		return time.Unix(epoch, 0).UTC().Format(time.RFC3339), nil
	}
	t, err := time.Parse(layout, value)
	if err != nil {
		return nil, fnWrap("time_parse", 2, err)
	}
	return t.Format(time.RFC3339), nil
}

func jpTimeUTC(args []any) (any, error) {
	t, err := timeArg("time_utc", args, 0)
	if err != nil {
		return nil, err
	}
	return t.UTC().Format(time.RFC3339), nil
}

func jpTimeDiff(args []any) (any, error) {
	t1, err := timeArg("time_diff", args, 0)
	if err != nil {
		return nil, err
	}
	t2, err := timeArg("time_diff", args, 1)
	if err != nil {
		return nil, err
	}
	return t2.Sub(t1).String(), nil
}

func jpTimeBefore(args []any) (any, error) {
	t1, err := timeArg("time_before", args, 0)
	if err != nil {
		return nil, err
	}
	t2, err := timeArg("time_before", args, 1)
	if err != nil {
		return nil, err
	}
	return t1.Before(t2), nil
}

func jpTimeAfter(args []any) (any, error) {
	t1, err := timeArg("time_after", args, 0)
	if err != nil {
		return nil, err
	}
	t2, err := timeArg("time_after", args, 1)
	if err != nil {
		return nil, err
	}
	return t1.After(t2), nil
}

// jpTimeBetween is true when start < t < end (both bounds exclusive).
func jpTimeBetween(args []any) (any, error) {
	t, err := timeArg("time_between", args, 0)
	if err != nil {
		return nil, err
	}
	start, err := timeArg("time_between", args, 1)
	if err != nil {
		return nil, err
	}
	end, err := timeArg("time_between", args, 2)
	if err != nil {
		return nil, err
	}
	return t.After(start) && t.Before(end), nil
}

func jpTimeTruncate(args []any) (any, error) {
	t, err := timeArg("time_truncate", args, 0)
	if err != nil {
		return nil, err
	}
	d, err := durationArg("time_truncate", args, 1)
	if err != nil {
		return nil, err
	}
	return t.Truncate(d).Format(time.RFC3339), nil
}
