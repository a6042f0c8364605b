/** A handler module's exports as the worker, the api, the sweeper and `djq dev` take them. */
import { describe, expect, test } from 'vitest';
import { registryOf } from '../../../../../functions/worker/handlers/index.js';
import { ConfigError } from '../../../../../lib/domain/errors.js';

const greet = () => 'hello';
const never = () => ({ retry: false });

describe('registryOf', () => {
  test("a module's handlers and retry policies become the registry", () => {
    const registry = registryOf({ handlers: { greet }, retryPolicies: { never } });
    expect(registry.handlers).toEqual({ greet });
    expect(registry.retryPolicies).toEqual({ never });
  });

  test('a module without retryPolicies has none', () => {
    expect(registryOf({ handlers: { greet } }).retryPolicies).toEqual({});
  });

  test('a module without handlers is refused, saying what it must export', () => {
    expect(() => registryOf({ greet })).toThrow(ConfigError);
    expect(() => registryOf({ greet })).toThrow(/must export handlers/);
  });

  test('an entry that is not a function is refused, naming it', () => {
    expect(() => registryOf({ handlers: { greet, typo: 'greet' } })).toThrow(/handlers\.typo must be a function, got string/);
    expect(() => registryOf({ handlers: { greet }, retryPolicies: { never: 3 } })).toThrow(/retryPolicies\.never must be a function, got number/);
  });

  test('handlers given as an array are refused', () => {
    expect(() => registryOf({ handlers: [greet] })).toThrow(/handlers export must be an object of functions by name, got an array/);
  });

  test('a handler named like a prototype member is an own entry, never the prototype', () => {
    const handlers = JSON.parse('{"__proto__": 0, "constructor": 0}') as Record<string, unknown>;
    for (const name of Object.keys(handlers)) Object.defineProperty(handlers, name, { value: greet, enumerable: true });
    const registry = registryOf({ handlers });
    expect(Object.hasOwn(registry.handlers, '__proto__')).toBe(true);
    expect(Object.hasOwn(registry.handlers, 'constructor')).toBe(true);
    expect(Object.getPrototypeOf(registry.handlers)).toBe(Object.prototype);
  });
});
