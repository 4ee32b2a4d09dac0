/** The console's pages. Hash history: every page is `/console/#/…`, so the server serves one file. */
import { createRouter, createWebHashHistory } from 'vue-router';
import DocumentsPage from './pages/DocumentsPage.vue';

export const router = createRouter({
  history: createWebHashHistory(),
  routes: [
    { path: '/', redirect: '/documents' },
    { path: '/documents', component: DocumentsPage, meta: { title: 'Documents' } },
    { path: '/:rest(.*)*', redirect: '/documents' },
  ],
});

router.afterEach((to) => {
  const title = typeof to.meta.title === 'string' ? to.meta.title : 'Console';
  document.title = `${title} · Agent Platform Server`;
});
