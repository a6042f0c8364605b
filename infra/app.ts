/** The CDK entry point (cdk.json runs it with tsx): `npm run synth`, `npm run deploy`. */
import { createQueueApp } from './queue-app.js';

createQueueApp().app.synth();
