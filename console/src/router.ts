/** The console's pages. Hash history: every page is `/console/#/…`, so the server serves one file. */
import { createRouter, createWebHashHistory } from 'vue-router';
import DocumentsPage from './pages/DocumentsPage.vue';

export const router = createRouter({
  history: createWebHashHistory(),
  routes: [
    { path: '/', redirect: '/documents' },
    { path: '/documents', component: DocumentsPage, meta: { title: 'Documents' } },
    {
      path: '/documents/:id',
      component: () => import('./pages/DocumentPage.vue'),
      props: true,
      meta: { title: 'Document' },
    },
    {
      path: '/search',
      component: () => import('./pages/SearchPage.vue'),
      meta: { title: 'Search' },
    },
    {
      path: '/keys',
      component: () => import('./pages/ApiKeysPage.vue'),
      meta: { title: 'API keys' },
    },
    {
      path: '/audit',
      component: () => import('./pages/AuditPage.vue'),
      meta: { title: 'Audit' },
    },
    {
      path: '/system',
      component: () => import('./pages/SystemPage.vue'),
      meta: { title: 'System' },
    },
    { path: '/:rest(.*)*', redirect: '/documents' },
  ],
});

router.afterEach((to) => {
  const title = typeof to.meta.title === 'string' ? to.meta.title : 'Console';
  document.title = `${title} · Agent Platform Server`;
});
