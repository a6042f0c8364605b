#!/usr/bin/env node
// The package ships TypeScript, and handler modules are TypeScript: tsx compiles both as they load, as ES
// modules or CommonJS, whichever the handler module's package.json makes it.
import { register as registerCommonJs } from 'tsx/cjs/api';
import { register } from 'tsx/esm/api';

// Lambda runs Node 22; the AWS SDK's reminder that this machine may run an older one is noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
registerCommonJs();
register();
await import('../infra/local/djq.ts');
