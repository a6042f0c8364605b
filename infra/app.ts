/** The CDK entry point (cdk.json runs it with tsx): `npm run synth`, `npm run deploy`. */
import { join } from 'node:path';
import { SETTINGS_RECORD_FILE } from './fixed-settings.js';
import { createQueueApp } from './queue-app.js';
import { REPO_ROOT } from './queue-function.js';

createQueueApp({}, join(REPO_ROOT, SETTINGS_RECORD_FILE)).app.synth();
