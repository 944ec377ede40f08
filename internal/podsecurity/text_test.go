package podsecurity

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// stringRef is FieldError.String as a plain concatenation, the reference
// for appendTo.
func stringRef(e FieldError) string {
	if e.Type == FieldErrorForbidden && hasBadValue(e.BadValue) {
		const sep = " is forbidden, forbidden values found: "
		switch v := e.BadValue.(type) {
		case string:
			return e.Field + sep + v
		case bool:
			return e.Field + sep + strconv.FormatBool(v)
		case int:
			return e.Field + sep + strconv.Itoa(v)
		case []string:
			return e.Field + sep + "[" + strings.Join(v, " ") + "]"
		}
		return fmt.Sprintf("%s is forbidden, forbidden values found: %+v", e.Field, e.BadValue)
	}
	return e.Field + ": " + string(e.Type)
}

// detailImagesRef is detailImages with the replacements and the split of
// its first version, the reference for the single pass.
func detailImagesRef(detail string, pod *decodedPod) []string {
	group, ok := containerNames(detail)
	if !ok {
		return nil
	}
	list := strings.ReplaceAll(strings.ReplaceAll(group, `"`, ""), " ", "")
	var images []string
	for _, n := range strings.Split(list, ",") {
		images = append(images, imageOf(n, pod))
	}
	return images
}

func TestFieldErrorText(t *testing.T) {
	for _, e := range []FieldError{
		{Type: FieldErrorForbidden, Field: "spec.hostNetwork", BadValue: true},
		{Type: FieldErrorForbidden, Field: "spec.containers[0].ports[1].hostPort", BadValue: 80},
		{Type: FieldErrorForbidden, Field: "x", BadValue: 0},
		{Type: FieldErrorForbidden, Field: "x", BadValue: 9},
		{Type: FieldErrorForbidden, Field: "x", BadValue: 10},
		{Type: FieldErrorForbidden, Field: "x", BadValue: -1},
		{Type: FieldErrorForbidden, Field: "x", BadValue: -2147483648},
		{Type: FieldErrorForbidden, Field: "x", BadValue: 65535},
		{Type: FieldErrorForbidden, Field: "x", BadValue: false},
		{Type: FieldErrorForbidden, Field: "x", BadValue: []string{"A"}},
		{Type: FieldErrorForbidden, Field: "x", BadValue: []string{"", ""}},
		{Type: FieldErrorForbidden, Field: "spec.securityContext.seccompProfile.type", BadValue: "Unconfined"},
		{Type: FieldErrorForbidden, Field: "spec.containers[0].securityContext.capabilities.add", BadValue: []string{"NET_RAW", "SYS_ADMIN"}},
		{Type: FieldErrorForbidden, Field: "spec.volumes[0].hostPath", BadValue: ""},
		{Type: FieldErrorForbidden, Field: "x", BadValue: []string{}},
		{Type: FieldErrorForbidden, Field: "x", BadValue: 1.5},
		{Type: FieldErrorForbidden, Field: "x", BadValue: nil},
		{Type: FieldErrorRequired, Field: "spec.containers[2].securityContext.runAsNonRoot"},
		{Type: FieldErrorRequired, Field: "", BadValue: "ignored"},
	} {
		if got, want := e.String(), stringRef(e); got != want {
			t.Errorf("%+v: %q, want %q", e, got, want)
		}
		switch e.BadValue.(type) {
		case string, bool, int, []string:
		default:
			continue // textLen guesses
		}
		if e.textLen() != len(e.String()) {
			t.Errorf("%+v: textLen %d, text %q", e, e.textLen(), e.String())
		}
	}
}

func TestDetailImages(t *testing.T) {
	pod := &decodedPod{Spec: corev1.PodSpec{
		Containers:     []corev1.Container{{Name: "a", Image: "nginx"}, {Name: "b c", Image: "redis"}},
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
	}}
	for _, detail := range []string{
		`container "a" must set securityContext.allowPrivilegeEscalation=false`,
		`containers "a", "init" must set securityContext.runAsNonRoot=true`,
		`containers "a","b c" must not include "NET_RAW" in securityContext.capabilities.add`,
		`containers "a", "missing" must set ...`,
		`pod or containers "a", "init" must set securityContext.seccompProfile.type`,
		`container ""a"" must x`,
		`containers , "a" , must x`,
		`containers "a" must`,
		`host namespaces (hostNetwork=true)`,
		`containers "a"\n must x`,
		"",
	} {
		got, want := detailImages(detail, pod), detailImagesRef(detail, pod)
		if fmt.Sprint(got) != fmt.Sprint(want) || (got == nil) != (want == nil) {
			t.Errorf("%q: %q, want %q", detail, got, want)
		}
	}
}
