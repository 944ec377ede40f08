package api

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// AnyAllConditions groups conditions: every All condition and at least one
// Any condition (when Any is not empty) must hold.
type AnyAllConditions struct {
	AnyConditions []Condition `json:"any,omitempty"`
	AllConditions []Condition `json:"all,omitempty"`
}

// Condition compares a key with a value using an operator. Key and Value are
// free-form JSON that may hold variables.
type Condition struct {
	Key      any    `json:"key,omitempty"`
	Operator string `json:"operator,omitempty"`
	Value    any    `json:"value,omitempty"`
	Message  string `json:"message,omitempty"`
}

// ContextEntry adds a variable or a data source to a rule's context.
type ContextEntry struct {
	Name            string           `json:"name,omitempty"`
	ConfigMap       *ConfigMapRef    `json:"configMap,omitempty"`
	APICall         *APICall         `json:"apiCall,omitempty"`
	ImageRegistry   *ImageRegistry   `json:"imageRegistry,omitempty"`
	Variable        *Variable        `json:"variable,omitempty"`
	GlobalReference *GlobalReference `json:"globalReference,omitempty"`
}

// Variable is an inline context variable.
type Variable struct {
	Value    any    `json:"value,omitempty"`
	JMESPath string `json:"jmesPath,omitempty"`
	Default  any    `json:"default,omitempty"`
}

// ConfigMapRef names a ConfigMap.
type ConfigMapRef struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// GlobalReference reads a global context entry.
type GlobalReference struct {
	Name     string `json:"name"`
	JMESPath string `json:"jmesPath,omitempty"`
}

// ImageRegistry reads image data from an OCI registry.
type ImageRegistry struct {
	Reference                string                    `json:"reference"`
	JMESPath                 string                    `json:"jmesPath,omitempty"`
	ImageRegistryCredentials *ImageRegistryCredentials `json:"imageRegistryCredentials,omitempty"`
}

// ImageRegistryCredentials configures registry authentication.
type ImageRegistryCredentials struct {
	AllowInsecureRegistry bool     `json:"allowInsecureRegistry,omitempty"`
	Providers             []string `json:"providers,omitempty"`
	Secrets               []string `json:"secrets,omitempty"`
}

// APICall is a Kubernetes API call or an external service call.
type APICall struct {
	URLPath  string        `json:"urlPath,omitempty"`
	Method   string        `json:"method,omitempty"`
	Data     []RequestData `json:"data,omitempty"`
	Service  *ServiceCall  `json:"service,omitempty"`
	JMESPath string        `json:"jmesPath,omitempty"`
	Default  any           `json:"default,omitempty"`
}

// RequestData is one key of a POST body.
type RequestData struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

// ServiceCall is an HTTP call to a service.
type ServiceCall struct {
	URL      string       `json:"url"`
	CABundle string       `json:"caBundle,omitempty"`
	Headers  []HTTPHeader `json:"headers,omitempty"`
}

// HTTPHeader is one HTTP header of a service call.
type HTTPHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Validation is the body of a validate rule.
type Validation struct {
	FailureAction                    *ValidationFailureAction          `json:"failureAction,omitempty"`
	ValidationFailureAction          *ValidationFailureAction          `json:"validationFailureAction,omitempty"`
	FailureActionOverrides           []ValidationFailureActionOverride `json:"failureActionOverrides,omitempty"`
	ValidationFailureActionOverrides []ValidationFailureActionOverride `json:"validationFailureActionOverrides,omitempty"`
	AllowExistingViolations          *bool                             `json:"allowExistingViolations,omitempty"`
	Message                          string                            `json:"message,omitempty"`
	Manifests                        *Manifests                        `json:"manifests,omitempty"`
	ForEachValidation                []ForEachValidation               `json:"foreach,omitempty"`
	Pattern                          any                               `json:"pattern,omitempty"`
	AnyPattern                       any                               `json:"anyPattern,omitempty"`
	Deny                             *Deny                             `json:"deny,omitempty"`
	PodSecurity                      *PodSecurity                      `json:"podSecurity,omitempty"`
	CEL                              *CEL                              `json:"cel,omitempty"`
	Assert                           any                               `json:"assert,omitempty"`
}

// CEL is a validate rule written in the Common Expression Language, with
// the fields of a ValidatingAdmissionPolicy.
type CEL struct {
	// Expressions must all hold for the resource to pass.
	Expressions []CELExpression `json:"expressions,omitempty"`
	// ParamKind is the kind of the parameter objects, read through the
	// host's Client; ParamRef selects them.
	ParamKind *ParamKind `json:"paramKind,omitempty"`
	ParamRef  *ParamRef  `json:"paramRef,omitempty"`
	// AuditAnnotations are compiled and checked; as upstream, their values
	// are not reported.
	AuditAnnotations []AuditAnnotation `json:"auditAnnotations,omitempty"`
	// Variables are bound as variables.<name>, in order.
	Variables []CELVariable `json:"variables,omitempty"`
	// Generate asks upstream to generate a ValidatingAdmissionPolicy
	// (accepted, not used by gavel).
	Generate *bool `json:"generate,omitempty"`
}

// CELExpression is one validation of a CEL rule.
type CELExpression struct {
	Expression        string `json:"expression"`
	Message           string `json:"message,omitempty"`
	MessageExpression string `json:"messageExpression,omitempty"`
	// Reason is the status reason of a failure (informational).
	Reason *string `json:"reason,omitempty"`
}

// ParamKind names the kind of parameter objects.
type ParamKind struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// ParamRef selects the parameter objects: by name, or by label selector.
type ParamRef struct {
	Name      string                `json:"name,omitempty"`
	Namespace string                `json:"namespace,omitempty"`
	Selector  *metav1.LabelSelector `json:"selector,omitempty"`
	// ParameterNotFoundAction is Allow or Deny: what happens when a
	// selector finds no parameter object.
	ParameterNotFoundAction *string `json:"parameterNotFoundAction,omitempty"`
}

// AuditAnnotation is an audit annotation of a CEL rule.
type AuditAnnotation struct {
	Key             string `json:"key"`
	ValueExpression string `json:"valueExpression"`
}

// CELVariable is a named CEL expression.
type CELVariable struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}

// Deny fails the rule when its conditions hold.
type Deny struct {
	Conditions any `json:"conditions,omitempty"`
}

// Manifests verifies signed Kubernetes YAML manifests, in the format of
// sigstore's k8s-manifest-sigstore (kubectl sigstore sign): the signed
// manifests travel in the resource's annotations, or in an OCI image.
type Manifests struct {
	// Attestors must all verify the manifest (each set up to its count).
	Attestors []AttestorSet `json:"attestors,omitempty"`
	// AnnotationDomain is the prefix of the signature annotations
	// (default cosign.sigstore.dev).
	AnnotationDomain string `json:"annotationDomain,omitempty"`
	// IgnoreFields are fields that may differ from the signed manifest.
	IgnoreFields []ObjectFieldBinding `json:"ignoreFields,omitempty"`
	// DryRunOption compares with the signed manifest as the API server
	// would create it (defaults and mutations applied).
	DryRunOption DryRunOption `json:"dryRun,omitzero"`
	// Repository is an OCI image holding the signed manifests
	// (overridden by an attestor's repository).
	Repository string `json:"repository,omitempty"`
}

// DryRunOption asks for a dry-run creation of the signed manifest.
type DryRunOption struct {
	Enable    bool   `json:"enable,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// ObjectFieldBinding names fields of the objects it selects.
type ObjectFieldBinding struct {
	Fields  []string                  `json:"fields,omitempty"`
	Objects []ManifestObjectReference `json:"objects,omitempty"`
}

// ManifestObjectReference selects objects: each non-empty field is a pattern
// ("*", a prefix ending in "*", or a value).
type ManifestObjectReference struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// ForEachValidation applies validation to each element of a list.
type ForEachValidation struct {
	List              string         `json:"list,omitempty"`
	ElementScope      *bool          `json:"elementScope,omitempty"`
	Context           []ContextEntry `json:"context,omitempty"`
	Preconditions     any            `json:"preconditions,omitempty"`
	Pattern           any            `json:"pattern,omitempty"`
	AnyPattern        any            `json:"anyPattern,omitempty"`
	Deny              *Deny          `json:"deny,omitempty"`
	ForEachValidation any            `json:"foreach,omitempty"`
}

// Mutation is the body of a mutate rule.
type Mutation struct {
	MutateExistingOnPolicyUpdate *bool             `json:"mutateExistingOnPolicyUpdate,omitempty"`
	Targets                      []TargetResource  `json:"targets,omitempty"`
	PatchStrategicMerge          any               `json:"patchStrategicMerge,omitempty"`
	PatchesJSON6902              string            `json:"patchesJson6902,omitempty"`
	ForEachMutation              []ForEachMutation `json:"foreach,omitempty"`
}

// ForEachMutation applies a patch to each element of a list.
type ForEachMutation struct {
	List                string         `json:"list,omitempty"`
	Order               *ForeachOrder  `json:"order,omitempty"`
	Context             []ContextEntry `json:"context,omitempty"`
	Preconditions       any            `json:"preconditions,omitempty"`
	PatchStrategicMerge any            `json:"patchStrategicMerge,omitempty"`
	PatchesJSON6902     string         `json:"patchesJson6902,omitempty"`
	ForEachMutation     any            `json:"foreach,omitempty"`
}

// ForeachOrder is Ascending or Descending.
type ForeachOrder string

// Foreach orders.
const (
	Ascending  ForeachOrder = "Ascending"
	Descending ForeachOrder = "Descending"
)

// ResourceSpec identifies one resource.
type ResourceSpec struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
	UID        string `json:"uid,omitempty"`
}

// TargetResource selects existing resources for a mutate rule.
type TargetResource struct {
	ResourceSpec  `json:",inline"`
	Selector      *metav1.LabelSelector `json:"selector,omitempty"`
	Context       []ContextEntry        `json:"context,omitempty"`
	Preconditions any                   `json:"preconditions,omitempty"`
}

// Generation is the body of a generate rule.
type Generation struct {
	GenerateExisting               *bool `json:"generateExisting,omitempty"`
	ResourceSpec                   `json:",inline"`
	Synchronize                    bool                `json:"synchronize,omitempty"`
	OrphanDownstreamOnPolicyDelete bool                `json:"orphanDownstreamOnPolicyDelete,omitempty"`
	RawData                        any                 `json:"data,omitempty"`
	Clone                          *CloneFrom          `json:"clone,omitempty"`
	CloneList                      *CloneList          `json:"cloneList,omitempty"`
	ForEachGeneration              []ForEachGeneration `json:"foreach,omitempty"`
}

// CloneFrom names the source of a clone.
type CloneFrom struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

// CloneList clones every selected resource of the given kinds.
type CloneList struct {
	Namespace string                `json:"namespace,omitempty"`
	Kinds     []string              `json:"kinds,omitempty"`
	Selector  *metav1.LabelSelector `json:"selector,omitempty"`
}

// ForEachGeneration generates for each element of a list.
type ForEachGeneration struct {
	List          string         `json:"list,omitempty"`
	Context       []ContextEntry `json:"context,omitempty"`
	Preconditions any            `json:"preconditions,omitempty"`
	ResourceSpec  `json:",inline"`
	RawData       any        `json:"data,omitempty"`
	Clone         *CloneFrom `json:"clone,omitempty"`
	CloneList     *CloneList `json:"cloneList,omitempty"`
}

// ImageVerification is a verifyImages entry.
type ImageVerification struct {
	// Type is Cosign (the default), SigstoreBundle or Notary.
	Type                string   `json:"type,omitempty"`
	Image               string   `json:"image,omitempty"` // deprecated: imageReferences
	ImageReferences     []string `json:"imageReferences,omitempty"`
	SkipImageReferences []string `json:"skipImageReferences,omitempty"`
	// Key, Roots, Subject, Issuer and AdditionalExtensions are deprecated
	// (attestors); they are converted as upstream converts them.
	Key                      string                     `json:"key,omitempty"`
	Roots                    string                     `json:"roots,omitempty"`
	Subject                  string                     `json:"subject,omitempty"`
	Issuer                   string                     `json:"issuer,omitempty"`
	AdditionalExtensions     map[string]string          `json:"additionalExtensions,omitempty"`
	Attestors                []AttestorSet              `json:"attestors,omitempty"`
	Attestations             []Attestation              `json:"attestations,omitempty"`
	Annotations              map[string]string          `json:"annotations,omitempty"`
	Repository               string                     `json:"repository,omitempty"`
	CosignOCI11              bool                       `json:"cosignOCI11,omitempty"`
	MutateDigest             *bool                      `json:"mutateDigest,omitempty"`
	VerifyDigest             *bool                      `json:"verifyDigest,omitempty"`
	Validation               *ValidateImageVerification `json:"validate,omitempty"`
	Required                 *bool                      `json:"required,omitempty"`
	ImageRegistryCredentials *ImageRegistryCredentials  `json:"imageRegistryCredentials,omitempty"`
	UseCache                 *bool                      `json:"useCache,omitempty"`
	FailureAction            *ValidationFailureAction   `json:"failureAction,omitempty"`
	Cosign                   any                        `json:"cosign,omitempty"`
}

// ValidateImageVerification is a verifyImages entry's validate block.
type ValidateImageVerification struct {
	Message string `json:"message,omitempty"`
	Deny    *Deny  `json:"deny,omitempty"`
}

// AttestorSet is a list of attestors of which Count must verify (all when
// Count is unset or 0).
type AttestorSet struct {
	Count   *int       `json:"count,omitempty"`
	Entries []Attestor `json:"entries,omitempty"`
}

// Attestor is one way of checking a signature: static keys, certificates,
// keyless, or a nested AttestorSet.
type Attestor struct {
	Keys         *StaticKeyAttestor   `json:"keys,omitempty"`
	Certificates *CertificateAttestor `json:"certificates,omitempty"`
	Keyless      *KeylessAttestor     `json:"keyless,omitempty"`
	// Attestor is a nested AttestorSet.
	Attestor    *AttestorSet      `json:"attestor,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Repository  string            `json:"repository,omitempty"`
	// SignatureAlgorithm is accepted as upstream's CRD defaults it
	// (sha256) on every attestor read from a cluster; keys take theirs
	// from keys.signatureAlgorithm, as upstream.
	SignatureAlgorithm string `json:"signatureAlgorithm,omitempty"`
}

// StaticKeyAttestor verifies with public keys (PEM, several allowed), a
// Secret or a KMS key.
type StaticKeyAttestor struct {
	PublicKeys         string           `json:"publicKeys,omitempty"`
	SignatureAlgorithm string           `json:"signatureAlgorithm,omitempty"`
	KMS                string           `json:"kms,omitempty"`
	Secret             *SecretReference `json:"secret,omitempty"`
	Rekor              *Rekor           `json:"rekor,omitempty"`
	CTLog              *CTLog           `json:"ctlog,omitempty"`
}

// SecretReference names a Secret holding a cosign.pub key.
type SecretReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// CertificateAttestor verifies with a certificate and its chain.
type CertificateAttestor struct {
	Certificate      string `json:"cert,omitempty"`
	CertificateChain string `json:"certChain,omitempty"`
	Rekor            *Rekor `json:"rekor,omitempty"`
	CTLog            *CTLog `json:"ctlog,omitempty"`
}

// KeylessAttestor verifies Sigstore keyless signatures.
type KeylessAttestor struct {
	Rekor                *Rekor            `json:"rekor,omitempty"`
	CTLog                *CTLog            `json:"ctlog,omitempty"`
	Issuer               string            `json:"issuer,omitempty"`
	IssuerRegExp         string            `json:"issuerRegExp,omitempty"`
	Subject              string            `json:"subject,omitempty"`
	SubjectRegExp        string            `json:"subjectRegExp,omitempty"`
	Roots                string            `json:"roots,omitempty"`
	AdditionalExtensions map[string]string `json:"additionalExtensions,omitempty"`
}

// Rekor configures the transparency log.
type Rekor struct {
	URL        string `json:"url,omitempty"`
	PubKey     string `json:"pubkey,omitempty"`
	IgnoreTlog bool   `json:"ignoreTlog,omitempty"`
}

// CTLog configures certificate transparency.
type CTLog struct {
	IgnoreSCT    bool   `json:"ignoreSCT,omitempty"`
	PubKey       string `json:"pubkey,omitempty"`
	TSACertChain string `json:"tsaCertChain,omitempty"`
}

// Attestation checks signed in-toto statements of one predicate type.
type Attestation struct {
	Name          string             `json:"name,omitempty"`
	Type          string             `json:"type,omitempty"`
	PredicateType string             `json:"predicateType,omitempty"`
	Attestors     []AttestorSet      `json:"attestors,omitempty"`
	Conditions    []AnyAllConditions `json:"conditions,omitempty"`
}
