package jmespath

import "testing"

// The operand rules follow the upstream engine (see arithmetic.go). Where the
// documentation page promises mixed number/quantity or number/duration
// addition, upstream rejects it with "Types mismatch"; these tables pin the
// upstream behaviour.

func TestAdd(t *testing.T) {
	runCases(t, mustNew(t), []fnCase{
		{expr: "add(`12`, `13`)", want: 25.0},
		{expr: "add('12Ki', '13Ki')", want: "25Ki"},
		{expr: "add('12Ki', '13')", want: "12301"},
		{expr: "add('100Mi', '1Gi')", want: "1124Mi"},
		{expr: "add('100m', '1')", want: "1100m"},
		{expr: "add('12s', '13s')", want: "25s"},
		{expr: "add('1h', '30s')", want: "1h0m30s"},
		{name: "45m is a quantity", expr: "add('1h30m', '45m')", err: "JMESPath function 'add': Types mismatch"},
		{name: "quantity plus number", expr: "add('12Ki', `13`)", err: "JMESPath function 'add': Types mismatch"},
		{name: "number plus quantity", expr: "add(`12`, '13Ki')", err: "JMESPath function 'add': Types mismatch"},
		{name: "duration plus number", expr: "add('1h', `5`)", err: "JMESPath function 'add': Types mismatch"},
		{name: "quantity plus duration", expr: "add('12Ki', '13s')", err: "JMESPath function 'add': Types mismatch"},
		{name: "minutes are milli", expr: "add('1m', '1s')", err: "Types mismatch"},
		{name: "bad string", expr: "add('abc', `1`)", err: "JMESPath function 'add': invalid operands"},
		{name: "null", expr: "add(missing, `1`)", data: map[string]any{}, err: "JMESPath function 'add': invalid operands"},
		{name: "bool", expr: "add(`true`, `1`)", err: "invalid operands"},
		{name: "doc example", expr: "add(element.resources.requests.memory || `0`, element.resources.limits.memory || `0`)",
			data: map[string]any{"element": map[string]any{"resources": map[string]any{"requests": map[string]any{"memory": "100Mi"}, "limits": map[string]any{"memory": "150Mi"}}}},
			want: "250Mi"},
	})
}

func TestSum(t *testing.T) {
	runCases(t, mustNew(t), []fnCase{
		{expr: "sum(input)", data: map[string]any{"input": []any{"2Ki", "5Gi", "8Mi"}}, want: "5251074Ki"},
		{expr: "sum(input)", data: map[string]any{"input": []any{"2h", "50s", "90s"}}, want: "2h2m20s"},
		{expr: "sum(input)", data: map[string]any{"input": []any{6, 3, 8}}, want: 17.0},
		{expr: "sum([`12`])", want: 12.0},
		{expr: "sum(['12Ki'])", want: "12Ki"},
		{name: "single element is not validated", expr: "sum(['abc'])", want: "abc"},
		{expr: "sum(['12Ki', '13'])", want: "12301"},
		{expr: "sum(['12s', '13s', '1s', '4s'])", want: "30s"},
		{expr: "sum(request.object.spec.containers[].resources.requests.memory)",
			data: map[string]any{"request": map[string]any{"object": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"resources": map[string]any{"requests": map[string]any{"memory": "512Mi"}}},
				map[string]any{"resources": map[string]any{"requests": map[string]any{"memory": "1Gi"}}},
			}}}}}, want: "1536Mi"},
		{name: "empty", expr: "sum(`[]`)", err: "JMESPath function 'sum': at least one element in the array is required"},
		{name: "mixed", expr: "sum([`12`, '13Ki'])", err: "JMESPath function 'sum': Types mismatch"},
		{name: "mixed duration", expr: "sum(['12s', `13`])", err: "JMESPath function 'sum': Types mismatch"},
		{name: "not an array", expr: "sum('1')", err: "JMESPath function 'sum': argument #1 is not of type array (got string)"},
		{name: "restart counts", expr: "sum(request.object.status.containerStatuses[*].restartCount || [`0`])",
			data: map[string]any{"request": map[string]any{"object": map[string]any{"status": map[string]any{"containerStatuses": []any{
				map[string]any{"restartCount": 2}, map[string]any{"restartCount": int64(3)},
			}}}}}, want: 5.0},
	})
}

func TestSubtract(t *testing.T) {
	runCases(t, mustNew(t), []fnCase{
		{expr: "subtract(`12`, `13`)", want: -1.0},
		{expr: "subtract('10Mi', '5Ki')", want: "10235Ki"},
		{expr: "subtract('12Ki', '13Ki')", want: "-1Ki"},
		{expr: "subtract('12Ki', '13')", want: "12275"},
		{expr: "subtract('12s', '13s')", want: "-1s"},
		{expr: "subtract(`5`, `2`)", want: 3.0},
		{name: "doc example with string replicas", expr: "subtract('5', `2`)", err: "JMESPath function 'subtract': Types mismatch"},
		{name: "quantity minus number", expr: "subtract('12Ki', `13`)", err: "Types mismatch"},
		{name: "duration minus quantity", expr: "subtract('12s', '13Ki')", err: "Types mismatch"},
		{name: "invalid", expr: "subtract(`1`, 'x')", err: "JMESPath function 'subtract': invalid operands"},
	})
}

func TestMultiply(t *testing.T) {
	runCases(t, mustNew(t), []fnCase{
		{expr: "multiply(`2.5`, `2.5`)", want: 6.25},
		{expr: "multiply('12Ki', `2`)", want: "24Ki"},
		{expr: "multiply(`2.5`, '12Ki')", want: "30Ki"},
		{expr: "multiply(`2.5`, '12')", want: "30"},
		{expr: "multiply('12Mi', `2.5`)", want: "30Mi"},
		{expr: "multiply('500m', `3`)", want: "1500m"},
		{expr: "multiply('12s', `2`)", want: "24s"},
		{expr: "multiply(`2.5`, '40s')", want: "1m40s"},
		{expr: "multiply(`3`, `2`)", want: 6.0},
		{name: "replicas doc example", expr: "multiply(`4`, `2`)", want: 8.0},
		{name: "quantity times quantity", expr: "multiply('12Ki', '12Ki')", err: "JMESPath function 'multiply': Types mismatch"},
		{name: "duration times duration", expr: "multiply('12s', '12s')", err: "Types mismatch"},
		{name: "quantity times duration", expr: "multiply('12Ki', '12s')", err: "Types mismatch"},
		{name: "invalid", expr: "multiply(`1`, `{}`)", err: "JMESPath function 'multiply': invalid operands"},
	})
}

func TestDivide(t *testing.T) {
	runCases(t, mustNew(t), []fnCase{
		{expr: "divide('10Mi', '5Ki')", want: 2048.0},
		{expr: "divide('256M', '256M')", want: 1.0},
		{expr: "divide('8', '3')", want: 8.0 / 3.0},
		{expr: "divide('12Ki', '200')", want: 61.44},
		{expr: "divide('12Ki', `3`)", want: "4Ki"},
		{expr: "divide('500m', `3`)", want: "166m"},
		{expr: "divide('12s', `3`)", want: "4s"},
		{expr: "divide('12s', '5s')", want: 2.4},
		{expr: "divide(`14`, `3`)", want: 4.666666666666667},
		{name: "memory ratio doc example", expr: "divide(element.resources.limits.memory || '0', element.resources.requests.memory || '1m')",
			data: map[string]any{"element": map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "300Mi"}, "requests": map[string]any{"memory": "100Mi"}}}},
			want: 3.0},
		{name: "scalar by quantity", expr: "divide(`14`, '5Ki')", err: "JMESPath function 'divide': Types mismatch"},
		{name: "scalar by duration", expr: "divide(`14`, '5s')", err: "Types mismatch"},
		{name: "quantity by duration", expr: "divide('12Ki', '2s')", err: "Types mismatch"},
		{name: "duration by quantity", expr: "divide('12s', '4')", err: "Types mismatch"},
		{name: "scalar by zero", expr: "divide(`14`, `0`)", err: "JMESPath function 'divide': Zero divisor passed"},
		{name: "quantity by zero", expr: "divide('4Ki', `0`)", err: "Zero divisor passed"},
		{name: "quantity by zero quantity", expr: "divide('4Ki', '0Ki')", err: "Zero divisor passed"},
		{name: "duration by zero", expr: "divide('4s', `0`)", err: "Zero divisor passed"},
		{name: "duration by zero duration", expr: "divide('4s', '0s')", err: "Zero divisor passed"},
		{name: "tiny divisor rounds up to 1n", expr: "divide('4Ki', `1e-300`)", want: "3906250Mi"},
	})
}

func TestModulo(t *testing.T) {
	runCases(t, mustNew(t), []fnCase{
		{expr: "modulo(`10`, `3`)", want: 1.0},
		{expr: "modulo(`13`, `5`)", want: 3.0},
		{expr: "modulo(`-7`, `3`)", want: -1.0},
		{expr: "modulo('12Ki', '5Ki')", want: "2Ki"},
		{expr: "modulo('13s', '2s')", want: "1s"},
		{expr: "modulo('1h', '7s')", want: "2s"},
		{expr: "modulo('256Mi', '128Mi')", want: "0"},
		{name: "quantity by scalar", expr: "modulo('12Ki', `13`)", err: "JMESPath function 'modulo': Types mismatch"},
		{name: "duration by scalar", expr: "modulo('13s', `2`)", err: "Types mismatch"},
		{name: "scalar by duration", expr: "modulo(`13`, '5s')", err: "Types mismatch"},
		{name: "by zero", expr: "modulo(`14`, `0`)", err: "JMESPath function 'modulo': Zero divisor passed"},
		{name: "quantity by zero", expr: "modulo('4Ki', '0Ki')", err: "Zero divisor passed"},
		{name: "duration by zero", expr: "modulo('4s', '0s')", err: "Zero divisor passed"},
		{name: "fractional quantity", expr: "modulo('4', '1.5')", err: "JMESPath function 'modulo': Non-integer argument(s) passed for modulo"},
		{name: "fractional dividend", expr: "modulo('4.5', '1')", err: "Non-integer argument(s) passed for modulo"},
		{name: "fractional scalar", expr: "modulo(`14`, `1.5`)", err: "Non-integer argument(s) passed for modulo"},
		{name: "fractional scalar dividend", expr: "modulo(`14.5`, `2`)", err: "Non-integer argument(s) passed for modulo"},
		{name: "huge scalar", expr: "modulo(`1e300`, `2`)", err: "Non-integer argument(s) passed for modulo"},
	})
}

func TestRound(t *testing.T) {
	runCases(t, mustNew(t), []fnCase{
		{expr: "round(`10.125`, `2`)", want: 10.13},
		{expr: "round(`10.123456`, `2`)", want: 10.12},
		{expr: "round(`2.5`, `0`)", want: 3.0},
		{expr: "round(`-2.5`, `0`)", want: -3.0},
		{expr: "round(to_number('3.14159'), `3`)", want: 3.142},
		{name: "negative places", expr: "round(`1.5`, `-1`)", err: "JMESPath function 'round': 2 argument is out of bounds (-1)"},
		{name: "fractional places", expr: "round(`1.5`, `1.5`)", err: "JMESPath function 'round': Non-integer argument(s) passed for round off"},
		{name: "string", expr: "round('1.5', `1`)", err: "JMESPath function 'round': argument #1 is not of type number (got string)"},
	})
}
