// The Open Responses specification as validators: validateEvent for one
// streaming event (the oneOf of POST /responses' text/event-stream), and
// validateResponse for a Response object.
import { readFileSync } from 'node:fs';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';

const spec = JSON.parse(readFileSync(new URL('../../../shared/spec/openresponses-openapi.json', import.meta.url)));
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ $id: 'openresponses', components: spec.components });
const streamSchema = spec.paths['/responses'].post.responses['200'].content['text/event-stream'].schema;

export const validateEvent = ajv.compile(
  JSON.parse(JSON.stringify(streamSchema).replaceAll('"#/components/', '"openresponses#/components/')));
export const validateResponse = ajv.compile({ $ref: 'openresponses#/components/schemas/ResponseResource' });
