package remote_test

import "reflect"

func reflectTypeOfMap() reflect.Type { return reflect.TypeFor[map[string]any]() }
