package verify

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/cosign/v2/pkg/cosign/bundle"
	"github.com/sigstore/cosign/v2/pkg/oci"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// Signed manifests (validate.manifests rules) in the format of sigstore's
// k8s-manifest-sigstore (kubectl sigstore sign):
//
//   - DOMAIN/message is base64 of the gzip of the signed blob, itself a
//     gzipped tar of the YAML files, or the YAML itself;
//   - DOMAIN/signature (then signature_1, signature_2, ...) is the base64
//     signature of the blob, each with its DOMAIN/certificate[_i] and
//     DOMAIN/bundle[_i] (base64 of gzipped PEM and Rekor bundle JSON);
//   - or, with a repository (DOMAIN/resourceBundleRef, the rule's or the
//     attestor's), an OCI image whose layers hold the YAML files, signed as
//     cosign signs images.
//
// Signatures are checked by cosign (VerifyBlobSignature,
// VerifyImageSignatures) with the options of the attestor, as for images.

var _ engine.ManifestVerifier = (*Verifier)(nil)

// maxManifestFiles bounds the YAML files read from a message or an image.
const maxManifestFiles = 1000

// VerifyManifest implements engine.ManifestVerifier.
func (v *Verifier) VerifyManifest(ctx context.Context, req engine.ManifestVerifyRequest) (*engine.SignedManifests, error) {
	domain := req.AnnotationDomain
	if domain == "" {
		domain = "cosign.sigstore.dev"
	}
	if req.Repository != "" {
		return v.verifyManifestImages(ctx, req)
	}
	msgKey := domain + "/message"
	msg, ok := req.Annotations[msgKey]
	if !ok {
		return nil, fmt.Errorf("%w: message not found: no annotation %s", engine.ErrManifestNotSigned, msgKey)
	}
	sets := signatureSets(req.Annotations, domain)
	if len(sets) == 0 {
		return nil, fmt.Errorf("%w: signature not found: no annotation %s/signature", engine.ErrManifestNotSigned, domain)
	}
	blob, err := v.decodeAnnotation(msg)
	if err != nil {
		return nil, fmt.Errorf("failed to decode the message annotation %s: %w", msgKey, err)
	}
	docs, err := v.yamlsInArtifact(blob)
	if err != nil {
		return nil, fmt.Errorf("failed to read YAMLs in the message annotation %s: %w", msgKey, err)
	}
	_, co, _, err := v.checkOpts(ctx, engine.ImageVerifyRequest{Attestor: req.Attestor})
	if err != nil {
		return nil, err
	}
	var failures []error
	for i, set := range sets {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		signer, err := v.verifyBlob(ctx, blob, set, req.Attestor, co)
		if err == nil {
			return &engine.SignedManifests{Manifests: docs, Signer: signer}, nil
		}
		failures = append(failures, fmt.Errorf("[signature %d/%d] %w", i+1, len(sets), err))
	}
	return nil, fmt.Errorf("signature verification failed: %w", errors.Join(failures...))
}

// signatureSet is one signature of the message, with its certificate and
// Rekor bundle annotations (empty when absent).
type signatureSet struct {
	signature, certificate, bundle string
}

func signatureSets(annotations map[string]string, domain string) []signatureSet {
	var sets []signatureSet
	for i := 0; i <= len(annotations); i++ {
		suffix := ""
		if i > 0 {
			suffix = "_" + strconv.Itoa(i)
		}
		sig, ok := annotations[domain+"/signature"+suffix]
		if !ok {
			break
		}
		sets = append(sets, signatureSet{signature: sig,
			certificate: annotations[domain+"/certificate"+suffix], bundle: annotations[domain+"/bundle"+suffix]})
	}
	return sets
}

// verifyBlob checks one signature of the blob with cosign; it returns the
// signer named by the signature's certificate, if any.
func (v *Verifier) verifyBlob(ctx context.Context, blob []byte, set signatureSet, a api.Attestor, co *cosign.CheckOpts) (string, error) {
	var opts []static.Option
	switch {
	case set.certificate != "":
		cert, err := v.decodeAnnotation(set.certificate)
		if err != nil {
			return "", fmt.Errorf("failed to decode the certificate annotation: %w", err)
		}
		opts = append(opts, static.WithCertChain(cert, nil))
	case a.Certificates != nil && a.Certificates.Certificate != "":
		// the policy's certificate names the signer (its key verifies)
		opts = append(opts, static.WithCertChain([]byte(a.Certificates.Certificate), []byte(a.Certificates.CertificateChain)))
	}
	if set.bundle != "" {
		raw, err := v.decodeAnnotation(set.bundle)
		if err != nil {
			return "", fmt.Errorf("failed to decode the bundle annotation: %w", err)
		}
		var b bundle.RekorBundle
		if err := json.Unmarshal(raw, &b); err != nil {
			return "", fmt.Errorf("failed to decode the Rekor bundle: %w", err)
		}
		opts = append(opts, static.WithBundle(&b))
	}
	sig, err := static.NewSignature(blob, set.signature, opts...)
	if err != nil {
		return "", err
	}
	if _, err := cosign.VerifyBlobSignature(ctx, sig, co); err != nil {
		return "", err
	}
	return signerOf(sig), nil
}

// signerOf names the subject of a signature's certificate: its first
// subject alternative name (an email or URI for Fulcio's), else its common
// name; empty without certificate.
func signerOf(sig oci.Signature) string {
	cert, err := sig.Cert()
	if err != nil || cert == nil {
		return ""
	}
	if names := cryptoutils.GetSubjectAlternateNames(cert); len(names) > 0 {
		return names[0]
	}
	return cert.Subject.CommonName
}

// decodeAnnotation reads base64 and, when gzipped, decompresses (as
// k8s-manifest-sigstore, data that is not gzip is kept as it is).
func (v *Verifier) decodeAnnotation(s string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	return v.gunzip(raw)
}

// gunzip decompresses gzip data up to the verifier's size bound; other
// data is returned as it is.
func (v *Verifier) gunzip(raw []byte) ([]byte, error) {
	if len(raw) < 2 || raw[0] != 0x1f || raw[1] != 0x8b {
		return raw, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	return v.readBounded(zr)
}

func (v *Verifier) readBounded(r io.Reader) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, v.maxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(out)) > v.maxBytes {
		return nil, fmt.Errorf("%w: over %d bytes", ErrTooLarge, v.maxBytes)
	}
	return out, nil
}

// yamlsInArtifact decodes the manifests of a message or an image layer
// as upstream's k8s-manifest-sigstore reads them: the YAML documents of
// the blob itself when it is YAML (kubectl sigstore sign writes a single
// manifest so), else those of the .yaml and .yml files of a tar archive,
// gzipped or not, in order.
func (v *Verifier) yamlsInArtifact(blob []byte) ([]map[string]any, error) {
	if docs, err := api.ReadDocuments(bytes.NewReader(blob), "message"); err == nil && len(docs) > 0 {
		out := make([]map[string]any, len(docs))
		for i := range docs {
			out[i] = docs[i].Object
		}
		return out, nil
	}
	br := bufio.NewReader(bytes.NewReader(blob))
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		br = bufio.NewReader(zr)
	}
	tr := tar.NewReader(br)
	var docs []map[string]any
	files, total := 0, int64(0)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		ext := path.Ext(h.Name)
		if h.Typeflag != tar.TypeReg || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		if files++; files > maxManifestFiles {
			return nil, fmt.Errorf("more than %d YAML files", maxManifestFiles)
		}
		data, err := v.readBounded(tr)
		if err != nil {
			return nil, err
		}
		if total += int64(len(data)); total > v.maxBytes {
			return nil, fmt.Errorf("%w: over %d bytes", ErrTooLarge, v.maxBytes)
		}
		read, err := api.ReadDocuments(bytes.NewReader(data), h.Name)
		if err != nil {
			return nil, err
		}
		for _, d := range read {
			docs = append(docs, d.Object)
		}
	}
	return docs, nil
}

// verifyManifestImages reads the manifests of the images named by
// req.Repository (a comma-separated list), each verified as cosign verifies
// an image signature with the attestor.
func (v *Verifier) verifyManifestImages(ctx context.Context, req engine.ManifestVerifyRequest) (*engine.SignedManifests, error) {
	var out engine.SignedManifests
	var failures []error
	for _, image := range strings.Split(req.Repository, ",") {
		image = strings.TrimSpace(image)
		if image == "" {
			continue
		}
		docs, err := v.verifyManifestImage(ctx, image, req.Attestor)
		if err != nil {
			failures = append(failures, err)
			continue
		}
		out.Manifests = append(out.Manifests, docs...)
	}
	if len(failures) > 0 && len(out.Manifests) == 0 {
		return nil, errors.Join(failures...)
	}
	return &out, nil
}

func (v *Verifier) verifyManifestImage(ctx context.Context, image string, a api.Attestor) ([]map[string]any, error) {
	ref, err := parseReference(image, nil)
	if err != nil {
		return nil, err
	}
	opts, err := v.remoteOptions(ctx, nil, nil)
	if err != nil {
		return nil, err
	}
	img, err := remote.Image(ref, opts...)
	if err != nil {
		return nil, registryError(fmt.Errorf("failed to fetch the manifest image %s: %w", image, err))
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, registryError(fmt.Errorf("failed to read the manifest image %s: %w", image, err))
	}
	var docs []map[string]any
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, registryError(fmt.Errorf("failed to read the manifest image %s: %w", image, err))
		}
		blob, err := v.readBounded(rc)
		rc.Close()
		var d []map[string]any
		if err == nil {
			d, err = v.yamlsInArtifact(blob)
		}
		if err != nil {
			return nil, registryError(fmt.Errorf("failed to read YAMLs in the manifest image %s: %w", image, err))
		}
		docs = append(docs, d...)
	}
	// the signature of the image read, even if its tag moves meanwhile
	byDigest := ref.Context().Digest(digest.String())
	vref, co, _, err := v.checkOpts(ctx, engine.ImageVerifyRequest{Image: byDigest.String(), Attestor: a})
	if err != nil {
		return nil, err
	}
	co.ClaimVerifier = cosign.SimpleClaimVerifier
	withCarriedIntermediates(vref, co, false)
	if _, _, err := cosign.VerifyImageSignatures(ctx, vref, co); err != nil {
		var noSig *cosign.ErrNoSignaturesFound
		if errors.As(err, &noSig) {
			return nil, fmt.Errorf("%w: signature not found for the manifest image %s: %w", engine.ErrManifestNotSigned, image, err)
		}
		return nil, registryError(fmt.Errorf("manifest image %s: %w", image, err))
	}
	return docs, nil
}
