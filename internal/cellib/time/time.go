// Package time is Kyverno's time library: time.now(), time.truncate(
// timestamp, duration) and time.toCron(timestamp) ("MIN HOUR DAY MONTH
// WEEKDAY" of the timestamp, in UTC, as the environment's timestamps are).
// time.now reads the clock the evaluation binds (package cel); this
// package's own binding, used only without one, reads time.Now.
package time

import (
	"strconv"
	gotime "time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/gavelpolicy/gavel/internal/cellib/call"
)

// NowOverload is the overload id of time.now(), whose binding the
// evaluation replaces with its clock.
const NowOverload = "time_now"

const libraryName = "kyverno.time"

// Lib declares the library.
func Lib() cel.EnvOption { return cel.Lib(lib{}) }

type lib struct{}

func (lib) LibraryName() string { return libraryName }

func (lib) ProgramOptions() []cel.ProgramOption { return nil }

func (lib) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Function("time.now", cel.Overload(NowOverload, nil, types.TimestampType,
			cel.FunctionBinding(func(...ref.Val) ref.Val { return Now(gotime.Now) }))),
		cel.Function("time.truncate", cel.Overload("time_truncate", []*cel.Type{types.TimestampType, types.DurationType}, types.TimestampType,
			cel.BinaryBinding(truncate))),
		cel.Function("time.toCron", cel.Overload("time_to_cron", []*cel.Type{types.TimestampType}, types.StringType,
			cel.UnaryBinding(toCron))),
	}
}

// Now is time.now() on a clock.
func Now(clock func() gotime.Time) ref.Val { return types.Timestamp{Time: clock()} }

func truncate(ts, d ref.Val) ref.Val {
	t, err := call.Native[gotime.Time](ts)
	if err != nil {
		return types.WrapErr(err)
	}
	dur, err := call.Native[gotime.Duration](d)
	if err != nil {
		return types.WrapErr(err)
	}
	return types.Timestamp{Time: t.Truncate(dur)}
}

func toCron(ts ref.Val) ref.Val {
	t, err := call.Native[gotime.Time](ts)
	if err != nil {
		return types.WrapErr(err)
	}
	b := make([]byte, 0, 16)
	for i, n := range []int{t.Minute(), t.Hour(), t.Day(), int(t.Month()), int(t.Weekday())} {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return types.String(b)
}
