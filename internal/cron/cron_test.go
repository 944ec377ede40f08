package cron

import (
	"strings"
	"testing"
	"time"
)

func TestNext(t *testing.T) {
	from := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC) // a Friday
	cases := []struct {
		spec string
		want []string
	}{
		{"* * * * *", []string{"2026-01-02T03:05:00Z", "2026-01-02T03:06:00Z"}},
		{"*/15 * * * *", []string{"2026-01-02T03:15:00Z", "2026-01-02T03:30:00Z", "2026-01-02T03:45:00Z", "2026-01-02T04:00:00Z"}},
		{"0 1 * * *", []string{"2026-01-03T01:00:00Z", "2026-01-04T01:00:00Z"}},
		{"30 2 * * MON-FRI", []string{"2026-01-05T02:30:00Z", "2026-01-06T02:30:00Z"}},
		{"0 0 1,15 * *", []string{"2026-01-15T00:00:00Z", "2026-02-01T00:00:00Z"}},
		{"0 0 31 * *", []string{"2026-01-31T00:00:00Z", "2026-03-31T00:00:00Z"}},
		{"0 0 29 feb *", []string{"2028-02-29T00:00:00Z"}},
		// both day fields restricted: either
		{"0 12 13 * FRI", []string{"2026-01-02T12:00:00Z", "2026-01-09T12:00:00Z", "2026-01-13T12:00:00Z"}},
		// one restricted: both
		{"0 12 ? * 0", []string{"2026-01-04T12:00:00Z", "2026-01-11T12:00:00Z"}},
		{"10/20 9-10 * * *", []string{"2026-01-02T09:10:00Z", "2026-01-02T09:30:00Z", "2026-01-02T09:50:00Z", "2026-01-02T10:10:00Z"}},
		{"0 0 * jan,JUL sun", []string{"2026-01-04T00:00:00Z"}},
		{"@hourly", []string{"2026-01-02T04:00:00Z", "2026-01-02T05:00:00Z"}},
		{"@daily", []string{"2026-01-03T00:00:00Z"}},
		{"@midnight", []string{"2026-01-03T00:00:00Z"}},
		{"@weekly", []string{"2026-01-04T00:00:00Z"}},
		{"@monthly", []string{"2026-02-01T00:00:00Z"}},
		{"@yearly", []string{"2027-01-01T00:00:00Z"}},
		{"@annually", []string{"2027-01-01T00:00:00Z"}},
		{"@every 90m", []string{"2026-01-02T04:34:05Z", "2026-01-02T06:04:05Z"}},
		{"@every 500ms", []string{"2026-01-02T03:04:06Z"}},
		{"CRON_TZ=Asia/Tokyo 0 9 * * *", []string{"2026-01-03T00:00:00Z"}},
		{"TZ=America/New_York 0 0 * * *", []string{"2026-01-02T05:00:00Z"}},
		{"0 0 30 2 *", []string{"0001-01-01T00:00:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			s, err := Parse(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			at := from
			for i, want := range c.want {
				at = s.Next(at)
				if got := at.UTC().Format(time.RFC3339); got != want {
					t.Fatalf("run %d: got %s, want %s", i, got, want)
				}
			}
		})
	}
}

func TestNextKeepsLocation(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip(err)
	}
	s, err := Parse("0 3 * * *")
	if err != nil {
		t.Fatal(err)
	}
	// in the location of the time given: 03:00 Paris
	got := s.Next(time.Date(2026, 6, 1, 12, 0, 0, 0, paris))
	if got.Location() != paris || got.Hour() != 3 || got.Day() != 2 {
		t.Errorf("got %v", got)
	}
	// across the spring DST change, 02:30 does not exist on 2026-03-29
	s, _ = Parse("30 2 * * *")
	got = s.Next(time.Date(2026, 3, 28, 12, 0, 0, 0, paris))
	if got.IsZero() || !got.After(time.Date(2026, 3, 28, 12, 0, 0, 0, paris)) {
		t.Errorf("got %v", got)
	}
}

func TestParseErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"":                          "empty spec",
		"* * * *":                   "expected exactly 5 fields, found 4",
		"0 0 1 * * *":               "expected exactly 5 fields, found 6",
		"60 * * * *":                "end of range (60) above maximum (59)",
		"* 24 * * *":                "end of range (24) above maximum (23)",
		"* * 0 * *":                 "beginning of range (0) below minimum (1)",
		"* * * 13 *":                "above maximum (12)",
		"* * * * 7":                 "above maximum (6)",
		"5-1 * * * *":               "beyond end of range",
		"*/0 * * * *":               "step of range should be a positive number",
		"*/x * * * *":               "step of range should be a positive number",
		"a * * * *":                 "failed to parse int from a",
		"* * * FOO *":               "failed to parse int from FOO",
		"@often":                    "unrecognized descriptor",
		"@every soon":               "failed to parse duration",
		"TZ=Nowhere/City 0 0 * * *": "provided bad location Nowhere/City",
		"CRON_TZ=UTC":               "must be followed by a schedule",
		"-1 * * * *":                "failed to parse int",
	} {
		_, err := Parse(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", spec, err, want)
		}
	}
}
