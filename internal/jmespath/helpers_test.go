package jmespath

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("reading testdata: %v", err)
	}
	return string(b)
}

func readJSON(t testing.TB, name string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(readTestdata(t, name)), &v); err != nil {
		t.Fatalf("decoding %s: %v", name, err)
	}
	return v
}

func base64Std(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
