package jmespath

import (
	"testing"
	"time"
)

// fixedClock is 2023-01-12T19:05:59Z seen from UTC-05:00.
func fixedClock() time.Time {
	return time.Date(2023, 1, 12, 14, 5, 59, 0, time.FixedZone("EST", -5*3600))
}

func TestTimeFunctions(t *testing.T) {
	intr := mustNew(t, WithClock(fixedClock))
	runCases(t, intr, []fnCase{
		// time_now / time_now_utc read the injected clock
		{expr: "time_now()", want: "2023-01-12T14:05:59-05:00"},
		{expr: "time_now_utc()", want: "2023-01-12T19:05:59Z"},
		// time_add
		{expr: "time_add('2023-01-12T12:37:56-05:00', '6h')", want: "2023-01-12T18:37:56-05:00"},
		{expr: "time_add(time_now_utc(), '4h') | time_to_cron(@)", want: "5 23 12 1 4"},
		{expr: "time_add('2023-01-12T12:00:00Z', '-90m')", want: "2023-01-12T10:30:00Z"},
		{name: "time_add bad time", expr: "time_add('yesterday', '1h')", err: "JMESPath function 'time_add': parsing time"},
		{name: "time_add bad duration", expr: "time_add('2023-01-12T12:00:00Z', '1d')", err: "JMESPath function 'time_add': time: unknown unit"},
		{name: "time_add null", expr: "time_add('2023-01-12T12:00:00Z', null)", err: "JMESPath function 'time_add': argument #2 is not of type string (got null)"},
		// time_after / time_before / time_between
		{expr: "time_after('2023-01-12T14:07:55-05:00', '2023-01-12T19:05:59Z')", want: true},
		{expr: "time_after('2023-01-12T19:05:59Z', '2023-01-13T19:05:59Z')", want: false},
		{expr: "time_after(time_now_utc(), '2023-01-12T00:00:00Z')", want: true},
		{expr: "time_before('2023-01-12T19:05:59Z', '2023-01-13T19:05:59Z')", want: true},
		{expr: "time_before('2023-01-12T19:05:59Z', '2023-01-11T19:05:59Z')", want: false},
		{expr: "time_before('2023-01-12T19:05:59Z', '2023-01-12T19:05:59Z')", want: false},
		{expr: "time_between('2023-01-12T19:05:59Z', '2023-01-01T19:05:59Z', '2023-01-15T19:05:59Z')", want: true},
		{expr: "time_between('2023-01-12T19:05:59Z', '2023-01-01T19:05:59Z', '2023-01-11T19:05:59Z')", want: false},
		{name: "time_between bounds are exclusive", expr: "time_between('2023-01-01T00:00:00Z', '2023-01-01T00:00:00Z', '2023-01-31T23:59:59Z')", want: false},
		{expr: "time_between(time_now_utc(), '2023-01-01T00:00:00Z', '2023-01-31T23:59:59Z')", want: true},
		{name: "time_between bad end", expr: "time_between('2023-01-12T19:05:59Z', '2023-01-01T19:05:59Z', 'x')", err: "JMESPath function 'time_between'"},
		// time_diff
		{expr: "time_diff('2023-01-10T00:00:00Z', '2023-01-11T00:00:00Z')", want: "24h0m0s"},
		{expr: "time_diff('2023-01-12T00:00:00Z', '2023-01-11T00:00:00Z')", want: "-24h0m0s"},
		{expr: "time_diff('2023-01-12T00:00:00Z', time_now_utc())", want: "19h5m59s"},
		// time_parse
		{expr: "time_parse('Mon Jan 02 2006 15:04:05 -0700', 'Fri Jun 22 2022 17:45:00 +0100')", want: "2022-06-22T17:45:00+01:00"},
		{expr: "time_parse('2006-01-02T15:04:05Z07:00', '2021-01-02T15:04:05-07:00')", want: "2021-01-02T15:04:05-07:00"},
		{expr: "time_parse('1702691171', '1702691171')", want: "2023-12-16T01:46:11Z"},
		{expr: "time_parse('0', '0')", want: "1970-01-01T00:00:00Z"},
		{name: "time_parse bad epoch", expr: "time_parse('1702691171', 'now')", err: "JMESPath function 'time_parse'"},
		{name: "time_parse mismatch", expr: "time_parse('2006-01-02', '02/01/2006')", err: "JMESPath function 'time_parse': parsing time"},
		// time_since
		{expr: "time_since('', '2022-04-10T03:14:05-07:00', '2022-04-11T03:14:05-07:00')", want: "24h0m0s"},
		{expr: "time_since('Mon Jan _2 15:04:05 MST 2006', 'Mon Jan 02 15:04:05 MST 2021', 'Mon Jan 10 03:14:16 MST 2021')", want: "180h10m11s"},
		{expr: "time_since('2006-Jan-02', '2020-Jan-14', '2020-Jan-17')", want: "72h0m0s"},
		{name: "time_since until now", expr: "time_since('', '2023-01-11T19:05:59Z', '')", want: "24h0m0s"},
		{name: "time_since bad start", expr: "time_since('', 'x', '')", err: "JMESPath function 'time_since': parsing time"},
		{name: "time_since bad end", expr: "time_since('', '2023-01-11T19:05:59Z', 'x')", err: "JMESPath function 'time_since'"},
		// time_to_cron
		{expr: "time_to_cron('2022-04-11T03:14:05-07:00')", want: "14 3 11 4 1"},
		{name: "time_to_cron bad", expr: "time_to_cron('2022-04-11')", err: "JMESPath function 'time_to_cron': parsing time"},
		// time_truncate
		{expr: "time_truncate('2023-01-12T17:37:00Z', '1h')", want: "2023-01-12T17:00:00Z"},
		{expr: "time_truncate('2023-01-12T17:37:00Z', '2h')", want: "2023-01-12T16:00:00Z"},
		{expr: "time_truncate('2021-01-02T23:04:05Z', '2h')", want: "2021-01-02T22:00:00Z"},
		{name: "time_truncate bad duration", expr: "time_truncate('2021-01-02T23:04:05Z', 'soon')", err: "JMESPath function 'time_truncate'"},
		// time_utc
		{expr: "time_utc('2021-01-02T18:04:05-05:00')", want: "2021-01-02T23:04:05Z"},
		{expr: "time_utc('2021-01-02T02:04:05+08:30')", want: "2021-01-01T17:34:05Z"},
		{name: "time_utc bad", expr: "time_utc(`1`)", err: "JMESPath function 'time_utc': argument #1 is not of type string (got number)"},
	})
}

func TestTimeClockIsPerInterpreter(t *testing.T) {
	a := mustNew(t, WithClock(func() time.Time { return time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC) }))
	b := mustNew(t, WithClock(func() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) }))
	ra, _ := a.Search("time_now_utc()", nil)
	rb, _ := b.Search("time_now_utc()", nil)
	if ra != "2020-01-01T00:00:00Z" || rb != "2030-01-01T00:00:00Z" {
		t.Fatalf("clocks leaked between interpreters: %v %v", ra, rb)
	}
	// The default clock is the real one.
	got, err := mustNew(t).Search("time_now_utc()", nil)
	if err != nil {
		t.Fatal(err)
	}
	now, err := time.Parse(time.RFC3339, got.(string))
	if err != nil || time.Since(now) > time.Minute || time.Since(now) < -time.Minute {
		t.Fatalf("default clock gave %v (%v)", got, err)
	}
}
