package migrate

// What the converter knows of the fields of Kubernetes objects, by name:
// enough to choose between the CEL forms of a JMESPath function (contains
// on a list or a string) and to leave out the presence tests of fields the
// API server always sets. A name not listed is of unknown type, which
// gives the general (longer) form.

// listFields are fields that hold lists.
var listFields = map[string]vtype{
	"containers": tAny, "initContainers": tAny, "ephemeralContainers": tAny, "volumes": tAny,
	"volumeMounts": tAny, "volumeDevices": tAny, "env": tAny, "envFrom": tAny, "ports": tAny,
	"args": tString, "command": tString, "tolerations": tAny, "imagePullSecrets": tAny,
	"items": tAny, "rules": tAny, "paths": tAny, "hosts": tString, "tls": tAny, "subjects": tAny,
	"verbs": tString, "apiGroups": tString, "resourceNames": tString,
	"drop": tString, "add": tString, "finalizers": tString, "ownerReferences": tAny,
	"topologySpreadConstraints": tAny, "hostAliases": tAny, "nodeSelectorTerms": tAny,
	"matchExpressions": tAny, "values": tString, "sysctls": tAny, "accessModes": tString,
	"externalIPs": tString, "loadBalancerSourceRanges": tString, "supplementalGroups": tNumber,
	"containerStatuses": tAny, "initContainerStatuses": tAny, "conditions": tAny, "taints": tAny,
	"ingress": tAny, "egress": tAny, "policyTypes": tString, "readinessGates": tAny,
	"webhooks": tAny, "clusterIPs": tString, "ipFamilies": tString, "nonResourceURLs": tString,
	"allowedHostPaths": tAny, "groups": tString, "exceptions": tAny, "any": tAny, "all": tAny,
}

// listOfLists are list fields whose elements are lists.
var listOfListsFields = map[string]bool{}

// mapFields are fields that hold maps.
var mapFields = map[string]bool{
	"metadata": true, "spec": true, "status": true, "labels": true, "annotations": true,
	"securityContext": true, "limits": true, "requests": true,
	"template": true, "selector": true, "matchLabels": true, "nodeSelector": true,
	"capabilities": true, "hostPath": true, "emptyDir": true, "secret": true, "configMap": true,
	"seccompProfile": true, "seLinuxOptions": true, "appArmorProfile": true, "affinity": true,
	"livenessProbe": true, "readinessProbe": true, "startupProbe": true, "userInfo": true,
	"jobTemplate": true, "podSelector": true, "namespaceSelector": true, "scaleTargetRef": true,
	"targetRef": true, "http": true, "backend": true, "service": true, "roleRef": true,
	"stringData": true, "valueFrom": true, "secretKeyRef": true, "configMapKeyRef": true,
}

// stringFields are fields that hold strings.
var stringFields = map[string]bool{
	"name": true, "namespace": true, "image": true, "kind": true, "apiVersion": true,
	"imagePullPolicy": true, "serviceAccountName": true, "serviceAccount": true, "type": true,
	"host": true, "path": true, "uid": true, "username": true, "operation": true,
	"restartPolicy": true, "dnsPolicy": true, "priorityClassName": true, "schedulerName": true,
	"runtimeClassName": true, "nodeName": true, "hostname": true, "subdomain": true,
	"storageClassName": true, "ingressClassName": true, "pathType": true, "secretName": true,
	"generateName": true, "resourceVersion": true, "creationTimestamp": true, "procMount": true,
	"localhostProfile": true, "mountPath": true, "subPath": true, "protocol": true, "key": true,
	"operator": true, "effect": true, "clusterIP": true, "externalName": true, "volumeName": true,
	"hostIP": true, "podIP": true, "phase": true, "level": true,
	"role": true, "user": true, "mountPropagation": true, "topologyKey": true,
	"whenUnsatisfiable": true, "loadBalancerIP": true, "externalTrafficPolicy": true,
}

// boolFields are fields that hold booleans.
var boolFields = map[string]bool{
	"privileged": true, "allowPrivilegeEscalation": true, "readOnlyRootFilesystem": true,
	"runAsNonRoot": true, "hostNetwork": true, "hostPID": true, "hostIPC": true, "hostUsers": true,
	"automountServiceAccountToken": true, "readOnly": true, "shareProcessNamespace": true,
	"stdin": true, "tty": true, "enableServiceLinks": true, "optional": true, "dryRun": true,
	"setHostnameAsFQDN": true, "suspend": true, "paused": true, "hostProcess": true,
}

// numberFields are fields that hold numbers.
var numberFields = map[string]bool{
	"replicas": true, "runAsUser": true, "runAsGroup": true, "fsGroup": true,
	"containerPort": true, "hostPort": true, "port": true, "nodePort": true,
	"terminationGracePeriodSeconds": true, "activeDeadlineSeconds": true,
	"ttlSecondsAfterFinished": true, "backoffLimit": true, "parallelism": true, "completions": true,
	"minReplicas": true, "maxReplicas": true, "restartCount": true, "priority": true,
	"initialDelaySeconds": true, "periodSeconds": true, "timeoutSeconds": true,
	"successThreshold": true, "failureThreshold": true, "revisionHistoryLimit": true,
	"progressDeadlineSeconds": true, "minReadySeconds": true, "generation": true, "weight": true,
	"startingDeadlineSeconds": true, "successfulJobsHistoryLimit": true, "failedJobsHistoryLimit": true,
}

// fieldType is the type a field of that name holds.
func fieldType(name string) vtype {
	switch {
	case hasKey(listFields, name):
		return tList
	case mapFields[name]:
		return tMap
	case stringFields[name]:
		return tString
	case boolFields[name]:
		return tBool
	case numberFields[name]:
		return tNumber
	}
	return tAny
}

func hasKey(m map[string]vtype, k string) bool {
	_, ok := m[k]
	return ok
}

// fieldTypeIn is the type of the field name of a value known by its own
// field name parent (a list's element by the singular: "rule"), and the
// type of its elements.
func fieldTypeIn(parent, name string) (vtype, vtype) {
	switch parent {
	case "data", "stringData":
		// ConfigMap and Secret data hold strings
		return tString, tAny
	case "rule":
		switch name {
		case "resources", "apiGroups", "verbs", "resourceNames", "nonResourceURLs":
			return tList, tString
		}
	case "container", "initContainer", "ephemeralContainer":
		if name == "resources" {
			return tMap, tAny
		}
	}
	return fieldType(name), elemOf(name)
}

// elemOf is the type of the elements of a list field.
func elemOf(name string) vtype {
	if t, ok := listFields[name]; ok {
		if listOfListsFields[name] {
			return tList
		}
		return t
	}
	return tAny
}

// listOfLists reports a list field whose elements are lists.
func listOfLists(name string) bool { return listOfListsFields[name] }

// nonEmptyField reports a list field the API server requires to be
// non-empty where it is read (a Pod's containers).
func nonEmptyField(name string) bool { return name == "containers" }

// oldObjectKey marks request.oldObject, null on CREATE and CONNECT.
const oldObjectKey = "\x00oldObject"

// requiredField reports a field of an element of a list field that the
// API server always sets (a container's name and image, a volume's name):
// such a field is read without a presence test.
// nullableLists are the list fields of Kubernetes objects that the API
// server writes as null when they are empty (no omitempty in their JSON
// tags): a Role's rules, a policy rule's verbs.
var nullableLists = map[string]bool{"rules": true, "verbs": true}

func requiredField(parent, name string) bool {
	switch parent {
	case oldObjectKey:
		return false
	case "":
		// the object's own metadata and spec (objects of kinds with a spec)
		return name == "metadata" || name == "spec" || name == "kind" || name == "apiVersion"
	case "spec":
		return name == "containers"
	case "container", "initContainer", "ephemeralContainer":
		return name == "name" || name == "image"
	case "volume", "volumeMount", "env", "imagePullSecret":
		return name == "name"
	case "port":
		return name == "containerPort" || name == "port"
	case "metadata":
		return name == "name"
	}
	return false
}
