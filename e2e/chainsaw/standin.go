package chainsaw

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// podEnv returns the container's environment as the Pod would have it:
// values, and the Pod's fields its fieldRefs name.
func podEnv(vars []corev1.EnvVar, pod, namespace, serviceAccount string) ([]string, error) {
	fields := map[string]string{"metadata.name": pod, "metadata.namespace": namespace, "spec.serviceAccountName": serviceAccount}
	var out []string
	for _, v := range vars {
		switch {
		case v.ValueFrom == nil:
			out = append(out, v.Name+"="+v.Value)
		case v.ValueFrom.FieldRef != nil:
			val, ok := fields[v.ValueFrom.FieldRef.FieldPath]
			if !ok {
				return nil, fmt.Errorf("env %s: the stand-in has no field %s", v.Name, v.ValueFrom.FieldRef.FieldPath)
			}
			out = append(out, v.Name+"="+val)
		default:
			return nil, fmt.Errorf("env %s: the stand-in reads fieldRefs only", v.Name)
		}
	}
	return out, nil
}

// podArgs returns the container's command line past its executable (the
// image's entrypoint when it has no command) and its arguments, with the
// paths under its volume mounts made paths under the folders that stand
// in for them (mounts: mount path to folder).
func podArgs(ctr corev1.Container, mounts map[string]string) []string {
	args := append(append([]string(nil), ctr.Command[min(1, len(ctr.Command)):]...), ctr.Args...)
	for i, a := range args {
		for mountPath, dir := range mounts {
			a = strings.ReplaceAll(a, strings.TrimSuffix(mountPath, "/")+"/", dir+"/")
		}
		args[i] = a
	}
	return args
}
