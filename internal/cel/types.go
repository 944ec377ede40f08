package cel

import apiservercel "k8s.io/apiserver/pkg/cel"

// The declared types of request and namespaceObject: the fields of
// admission/v1 AdmissionRequest (without uid and the objects, which are
// variables of their own) and of core/v1 Namespace (without managed
// fields and owner references), as ValidatingAdmissionPolicy declares
// them.

func fieldsOf(fs ...*apiservercel.DeclField) map[string]*apiservercel.DeclField {
	out := make(map[string]*apiservercel.DeclField, len(fs))
	for _, f := range fs {
		out[f.Name] = f
	}
	return out
}

func declField(name string, t *apiservercel.DeclType, required bool) *apiservercel.DeclField {
	return apiservercel.NewDeclField(name, t, required, nil, nil)
}

func stringList() *apiservercel.DeclType {
	return apiservercel.NewListType(apiservercel.StringType, -1)
}

// requestType declares kubernetes.AdmissionRequest; with objects, also
// its object and oldObject fields (dyn), as Kyverno declares it.
func requestType(objects bool) *apiservercel.DeclType {
	gvk := apiservercel.NewObjectType("kubernetes.GroupVersionKind", fieldsOf(
		declField("group", apiservercel.StringType, true),
		declField("version", apiservercel.StringType, true),
		declField("kind", apiservercel.StringType, true),
	))
	gvr := apiservercel.NewObjectType("kubernetes.GroupVersionResource", fieldsOf(
		declField("group", apiservercel.StringType, true),
		declField("version", apiservercel.StringType, true),
		declField("resource", apiservercel.StringType, true),
	))
	userInfo := apiservercel.NewObjectType("kubernetes.UserInfo", fieldsOf(
		declField("username", apiservercel.StringType, false),
		declField("uid", apiservercel.StringType, false),
		declField("groups", stringList(), false),
		declField("extra", apiservercel.NewMapType(apiservercel.StringType, stringList(), -1), false),
	))
	fs := fieldsOf(
		declField("kind", gvk, true),
		declField("resource", gvr, true),
		declField("subResource", apiservercel.StringType, false),
		declField("requestKind", gvk, true),
		declField("requestResource", gvr, true),
		declField("requestSubResource", apiservercel.StringType, false),
		declField("name", apiservercel.StringType, true),
		declField("namespace", apiservercel.StringType, false),
		declField("operation", apiservercel.StringType, true),
		declField("userInfo", userInfo, true),
		declField("dryRun", apiservercel.BoolType, false),
		declField("options", apiservercel.DynType, false),
	)
	if objects {
		fs["object"] = declField("object", apiservercel.DynType, false)
		fs["oldObject"] = declField("oldObject", apiservercel.DynType, false)
	}
	return apiservercel.NewObjectType("kubernetes.AdmissionRequest", fs)
}

// namespaceType declares kubernetes.Namespace.
func namespaceType() *apiservercel.DeclType {
	str := apiservercel.StringType
	spec := apiservercel.NewObjectType("kubernetes.NamespaceSpec", fieldsOf(
		declField("finalizers", stringList(), true),
	))
	condition := apiservercel.NewObjectType("kubernetes.NamespaceCondition", fieldsOf(
		declField("status", str, true),
		declField("type", str, true),
		declField("lastTransitionTime", apiservercel.TimestampType, true),
		declField("message", str, true),
		declField("reason", str, true),
	))
	status := apiservercel.NewObjectType("kubernetes.NamespaceStatus", fieldsOf(
		declField("conditions", apiservercel.NewListType(condition, -1), true),
		declField("phase", str, true),
	))
	stringMap := apiservercel.NewMapType(str, str, -1)
	metadata := apiservercel.NewObjectType("kubernetes.NamespaceMetadata", fieldsOf(
		declField("name", str, true),
		declField("generateName", str, true),
		declField("namespace", str, true),
		declField("labels", stringMap, true),
		declField("annotations", stringMap, true),
		declField("UID", str, true),
		declField("creationTimestamp", apiservercel.TimestampType, true),
		declField("deletionGracePeriodSeconds", apiservercel.IntType, true),
		declField("deletionTimestamp", apiservercel.TimestampType, true),
		declField("generation", apiservercel.IntType, true),
		declField("resourceVersion", str, true),
		declField("finalizers", stringList(), true),
	))
	return apiservercel.NewObjectType("kubernetes.Namespace", fieldsOf(
		declField("metadata", metadata, true),
		declField("spec", spec, true),
		declField("status", status, true),
	))
}
