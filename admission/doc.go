// Package admission answers Kubernetes admission requests
// (k8s.io/api/admission/v1) with a compiled policy set, as upstream's
// webhooks answer them, so that an admission webhook is a few lines:
//
//	var review admissionv1.AdmissionReview
//	// ... decode the request body into review
//	resp, _ := admission.Validate(ctx, set, review.Request) // or admission.Mutate
//	review.Request, review.Response = nil, resp
//	// ... encode review as the response body
//
// Request converts an AdmissionRequest into an engine.Request: operation,
// kind, resource, sub-resource, name, namespace, UID, dry run, user info,
// and the object and old object (their raw JSON, or the typed or
// unstructured objects an in-process caller puts in RawExtension.Object).
// As upstream, an object without metadata.namespace gets the request's
// namespace. RBAC roles and namespace labels are not part of an
// AdmissionRequest: set Roles, ClusterRoles and NamespaceLabels on the
// engine.Request (or give the engine a NamespaceLabeler) when policies
// read them; nor is the kind of a subresource request's resource (pods
// for pods/exec), which a host with discovery sets as
// engine.Request.ResourceKind so that match blocks such as "Pod/exec"
// select the request, as upstream's webhooks do.
//
// ValidateResponse and MutateResponse build the AdmissionResponse from the
// engine's response and decision (engine.Response.Blocked): allowed or
// not, the status message and the warnings in upstream's formats, and for
// a mutation the JSONPatch. Validate and Mutate convert, evaluate and
// answer in one call; a host that adds to the engine request (roles,
// namespace labels) or reuses it (generate rules after an allowed
// request) calls the three steps itself:
//
//	req, err := admission.Request(ar)
//	var resp *engine.Response
//	if err == nil {
//		req.ClusterRoles = clusterRolesOf(ar.UserInfo) // the host's RBAC lookup
//		resp, err = set.Validate(ctx, req)
//	}
//	answer := admission.ValidateResponse(ar, resp, err)
package admission
