// For tools that read .ts files without Vue's language service (type-aware ESLint): a .vue
// import is a component. vue-tsc and Vite resolve the real component types and ignore this.
declare module '*.vue' {
  import type { DefineComponent } from 'vue';
  const component: DefineComponent;
  export default component;
}
