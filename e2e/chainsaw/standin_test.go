package chainsaw

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPodEnv(t *testing.T) {
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	tests := []struct {
		name string
		vars []corev1.EnvVar
		want []string
		err  string
	}{
		{name: "values and fieldRefs", vars: []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: field("metadata.name")},
			{Name: "POD_NAMESPACE", ValueFrom: field("metadata.namespace")},
			{Name: "POD_SERVICE_ACCOUNT", ValueFrom: field("spec.serviceAccountName")},
			{Name: "LEVEL", Value: "debug"},
		}, want: []string{"POD_NAME=gavel-0", "POD_NAMESPACE=gavel", "POD_SERVICE_ACCOUNT=gavel-sa", "LEVEL=debug"}},
		{name: "a field the stand-in lacks", vars: []corev1.EnvVar{{Name: "IP", ValueFrom: field("status.podIP")}},
			err: "env IP: the stand-in has no field status.podIP"},
		{name: "a Secret's key", vars: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}},
			err: "env K: the stand-in reads fieldRefs only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := podEnv(tc.vars, "gavel-0", "gavel", "gavel-sa")
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("podEnv = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestPodArgs(t *testing.T) {
	mounts := map[string]string{"/tls": "/tmp/pod/volumes/tls", "/etc/gavel/": "/tmp/pod/volumes/config"}
	tests := []struct {
		name string
		ctr  corev1.Container
		want []string
	}{
		{name: "the deployment's arguments", ctr: corev1.Container{Args: []string{"-tls-cert=/tls/tls.crt", "-tls-key", "/tls/tls.key", "-listen=:9443"}},
			want: []string{"-tls-cert=/tmp/pod/volumes/tls/tls.crt", "-tls-key", "/tmp/pod/volumes/tls/tls.key", "-listen=:9443"}},
		{name: "a command: its executable is the stand-in's", ctr: corev1.Container{Command: []string{"/gavel", "-config=/etc/gavel/c.yaml"}, Args: []string{"-v"}},
			want: []string{"-config=/tmp/pod/volumes/config/c.yaml", "-v"}},
		{name: "a path that only starts like a mount", ctr: corev1.Container{Args: []string{"-x=/tlsx/a", "/tls"}},
			want: []string{"-x=/tlsx/a", "/tls"}},
		{name: "nothing", ctr: corev1.Container{}, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := podArgs(tc.ctr, mounts); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("podArgs = %q, want %q", got, tc.want)
			}
		})
	}
}
